#!/usr/bin/env python3
"""A DDP script (no @record) where one rank exits with a code of its own: sys.exit(3).

    wick run dist.ddp -j 1x2 --tee 1 --env PET_REDIRECTS=1 \
        --script examples/failures/exit_rank.py -- --exit_rank 1

The other rank's all_reduce then fails in gloo ("Connection closed by peer"): a
consequence. wick names the first failure: "rank 1: exit code 3".
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exit_rank", type=int, default=1)
    p.add_argument("--code", type=int, default=3)
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print(f"rank {rank} (pid {os.getpid()}) ready", flush=True)
    for step in range(100):
        if rank == args.exit_rank and step == 2:
            print(f"rank {rank}: giving up at step {step}", flush=True)
            sys.exit(args.code)
        t = torch.ones(4) * rank
        dist.all_reduce(t)
        print(f"step {step} sum {t[0].item()}", flush=True)
        time.sleep(0.1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
