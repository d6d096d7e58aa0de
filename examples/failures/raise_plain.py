#!/usr/bin/env python3
"""A plain (non-distributed) training script that raises at step 3, as a bug does.

    wick run utils.python --script examples/failures/raise_plain.py

wick names the exception as the app's error: "python/0: ValueError: boom at step 3".
"""

import torch
from torch import nn


def train_step(model, opt, step):
    x = torch.randn(32, 8)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 3:
        raise ValueError(f"boom at step {step}")
    return loss.item()


def main():
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = train_step(model, opt, step)
        print(f"step {step} loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    main()
