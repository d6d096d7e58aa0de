#!/usr/bin/env python3
"""A small, real DDP training job for trying wick: launch it with torchrun (dist.ddp).

It fits a two-layer network to synthetic data with DistributedDataParallel over gloo
(CPU only), one DistributedSampler shard per rank. Rank 0 draws a progress bar with
carriage returns on stderr, as tqdm does, and every rank prints its loss on stdout at
the end of each epoch. --fail_rank R --fail_step K makes rank R raise at global step K, to see how
a failure is reported. --checkpoint PATH saves the model (rank 0) after every epoch and
resumes from it when it exists.

    wick run -s local_cwd dist.ddp -j 1x2 --tee 1 --env PET_REDIRECTS=1 \
        --script examples/ddp/train.py -- --epochs 3

Needs PyTorch (Debian: apt-get install python3-torch).
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from torch.distributed.elastic.multiprocessing.errors import record

BAR_WIDTH = 30


class InjectedFailure(RuntimeError):
    """Raised on purpose by --fail_rank at --fail_step."""


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3, help="passes over the data")
    p.add_argument("--samples", type=int, default=4096, help="synthetic samples in all")
    p.add_argument("--batch", type=int, default=64, help="batch size per rank")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate")
    p.add_argument("--step_delay", type=float, default=0.0,
                   help="seconds to sleep after each step, to watch a slow run")
    p.add_argument("--fail_rank", type=int, default=-1, help="the global rank that raises")
    p.add_argument("--fail_step", type=int, default=5, help="the global step at which it raises")
    p.add_argument("--checkpoint", default="", help="save (and resume) the model here")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def synthetic(n, seed):
    """y = sin(x . w) + noise: the same data on every rank (the sampler shards it)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, 1, generator=g)
    y = torch.sin(x @ w) + 0.05 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


def bar(epoch, done, total, loss):
    """One progress bar frame of constant width, like tqdm's."""
    filled = BAR_WIDTH * done // total
    pct = 100 * done // total
    return f"epoch {epoch} {pct:3d}%|{'#' * filled}{' ' * (BAR_WIDTH - filled)}| {done:4d}/{total:4d} loss {loss:8.5f}"


# record writes an uncaught exception to torchelastic's error file
# ($TORCHELASTIC_ERROR_FILE): torchrun then reports this rank's exception as the root
# cause, and wick shows it as the app's error.
@record
def main(argv):
    args = parse_args(argv)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.manual_seed(args.seed)
    print(f"rank {rank}/{world} (local rank {local_rank}, pid {os.getpid()}) ready", flush=True)

    data = synthetic(args.samples, args.seed)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    start_epoch = 0
    if args.checkpoint and os.path.exists(args.checkpoint):
        state = torch.load(args.checkpoint)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start_epoch = state["epoch"] + 1
        print(f"rank {rank}: resumed from {args.checkpoint} at epoch {start_epoch}", flush=True)

    step = 0
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        total, running = len(loader), 0.0
        for i, (x, y) in enumerate(loader, 1):
            step += 1
            if rank == args.fail_rank and step == args.fail_step:
                raise InjectedFailure(f"rank {rank} fails on purpose at step {step}")
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            running += loss.item()
            if rank == 0:
                # \r and no newline: the bar is rewritten in place until the epoch ends.
                # On stderr, as tqdm draws it: with torchrun --tee 1 stderr reaches the
                # node's output untouched, while the tee of stdout would cut the bar
                # into a line per frame.
                sys.stderr.write("\r" + bar(epoch, i, total, running / i))
                sys.stderr.flush()
            if args.step_delay > 0:
                time.sleep(args.step_delay)
        if rank == 0:
            sys.stderr.write("\n")
        # The mean loss over every rank: an all-reduce, so every rank takes part.
        mean = torch.tensor([running / max(total, 1)])
        dist.all_reduce(mean)
        mean /= world
        print(f"rank {rank} epoch {epoch} loss {running / max(total, 1):.5f} mean {mean.item():.5f}", flush=True)
        if rank == 0 and args.checkpoint:
            tmp = args.checkpoint + ".tmp"
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, tmp)
            os.replace(tmp, args.checkpoint)
            print(f"rank 0: saved {args.checkpoint}", flush=True)
        dist.barrier()
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
