#!/usr/bin/env python3
"""A DataLoader whose worker process is killed (SIGKILL, as the OOM killer does).

    wick run utils.python --script examples/failures/loader_killed.py

torch's main process notices and raises "RuntimeError: DataLoader worker (pid N) is
killed by signal: Killed."; wick shows that line.
"""

import os
import signal

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        if i == 100:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.full((4,), float(i))


def main():
    loader = DataLoader(Samples(), batch_size=8, num_workers=2)
    for step, batch in enumerate(loader):
        print(f"step {step} mean {batch.mean().item():.1f}", flush=True)


if __name__ == "__main__":
    main()
