#!/usr/bin/env python3
"""A rank that dies of a segmentation fault (a native extension's bug), no traceback.

    wick run utils.python --script examples/failures/segfault.py
    wick run dist.ddp -j 1x2 --tee 1 --env PET_REDIRECTS=1 \
        --script examples/failures/segfault.py -- --rank 1

wick names the signal: "python/0: killed by SIGSEGV", "rank 1: killed by SIGSEGV".
"""

import argparse
import ctypes
import os
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, default=0, help="the rank that crashes")
    args = p.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    print(f"rank {rank} started", flush=True)
    time.sleep(0.5)
    if rank == args.rank:
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    time.sleep(30)


if __name__ == "__main__":
    main()
