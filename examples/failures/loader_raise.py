#!/usr/bin/env python3
"""A DataLoader whose worker process raises on a corrupt sample.

    wick run utils.python --script examples/failures/loader_raise.py

torch re-raises it in the main process as "ValueError: Caught ValueError in
DataLoader worker process 0." with the worker's "Original Traceback" in its message;
wick names the original: "python/0: ValueError: corrupt sample 81 in shard 1".
"""

import torch
from torch.utils.data import DataLoader, Dataset


class Shard(Dataset):
    def __init__(self, shard, n=128):
        self.shard, self.n = shard, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == 81:
            raise ValueError(f"corrupt sample {i} in shard {self.shard}")
        return torch.full((4,), float(i))


def main():
    loader = DataLoader(Shard(1), batch_size=8, num_workers=2)
    for step, batch in enumerate(loader):
        print(f"step {step} mean {batch.mean().item():.1f}", flush=True)


if __name__ == "__main__":
    main()
