#!/usr/bin/env python3
"""A DataLoader that deadlocks: a worker takes a lock it already holds.

    wick run utils.python --script examples/failures/loader_deadlock.py

The main process waits for a batch that never comes (DataLoader's timeout is 0: for
ever). wick's hang alarm fires; wick stack shows the main process in the loader's
next() and the worker in __getitem__.
"""

import threading

import torch
from torch.utils.data import DataLoader, Dataset

LOCK = threading.Lock()


class Cached(Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, i):
        with LOCK:
            if i == 40:
                with LOCK:  # not reentrant: waits for itself
                    pass
            return torch.full((4,), float(i))


def main():
    loader = DataLoader(Cached(), batch_size=8, num_workers=1)
    for step, batch in enumerate(loader):
        print(f"step {step} mean {batch.mean().item():.1f}", flush=True)


if __name__ == "__main__":
    main()
