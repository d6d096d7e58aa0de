#!/usr/bin/env python3
"""A DDP script (no @record) where one rank runs out of memory: it appends 16 MiB
buffers at its step 2 until the kernel's OOM killer kills it (SIGKILL).

    wick run -s local_docker dist.ddp -j 2x1 --memMB 1024 --tee 1 --env PET_REDIRECTS=1 \
        --image IMAGE_WITH_TORCH --script oom_rank.py -- --oom_rank 1

Its container's memory limit (--memMB) is what it runs into: the Engine says the
container was OOM-killed, and wick names it: "rank 1: killed by the kernel's OOM
killer (SIGKILL)". The other ranks' all_reduce then fails in gloo: a consequence.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--oom_rank", type=int, default=1)
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print(f"rank {rank} (pid {os.getpid()}) ready", flush=True)
    hoard = []
    for step in range(100):
        if rank == args.oom_rank and step == 2:
            print(f"rank {rank}: loading the whole dataset at step {step}", flush=True)
            while True:
                hoard.append(bytearray(16 << 20))  # bytearray zero-fills: the pages are touched
        t = torch.ones(4) * rank
        dist.all_reduce(t)
        print(f"step {step} sum {t[0].item()}", flush=True)
        time.sleep(0.1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
