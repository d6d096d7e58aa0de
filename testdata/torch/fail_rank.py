"""A tiny DDP-style job for wick's tests: every rank all-reduces a tensor in a loop
(gloo), and the rank named by --fail-rank raises at step --fail-step. Run it under
torchrun; the other ranks then fail in gloo, after it."""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--fail-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(1)
    for step in range(a.steps):
        if rank == a.fail_rank and step == a.fail_step:
            raise RuntimeError(f"rank {rank} raised at step {step}")
        dist.all_reduce(t)
        print(f"rank {rank} step {step}", flush=True)
        time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
