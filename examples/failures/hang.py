#!/usr/bin/env python3
"""A DDP job that hangs: one rank sleeps forever before all_reduce, the others wait in it.

    wick run dist.ddp -j 1x2 --tee 1 --env PET_REDIRECTS=1 \
        --script examples/failures/hang.py -- --stuck_rank 1

Nothing fails for gloo's 30 minute timeout. wick raises its hang alarm once no
rank printed or stepped for the hang time (--hang-after), naming rank 1, which
stopped at step 2 while the others logged step 3; wick stack HANDLE shows where
each rank is: the sleeping rank in slow_io, the others in all_reduce.

With --timeout S the collectives time out after S seconds instead of 30 minutes:
the ranks waiting in all_reduce raise gloo's "Timed out waiting ...ms for recv
operation to complete", which wick names as the app's cause.
"""

import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def slow_io():
    while True:  # a stuck read, a lock never released
        time.sleep(3600)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stuck_rank", type=int, default=1)
    p.add_argument("--stuck_step", type=int, default=3)
    p.add_argument("--timeout", type=float, default=0, help="the collectives' timeout in seconds (0: torch's 30 minutes)")
    args = p.parse_args()
    if args.timeout > 0:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    else:
        dist.init_process_group("gloo")
    rank = dist.get_rank()
    for step in range(1000):
        if rank == args.stuck_rank and step == args.stuck_step:
            slow_io()  # before its loss: the others log step 3, then wait for it
        loss = 1.0 / (step + 1)
        print(f"step {step} loss {loss:.4f}", flush=True)
        t = torch.ones(2)  # the gradients' all_reduce
        dist.all_reduce(t)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
