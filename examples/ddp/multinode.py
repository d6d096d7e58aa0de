#!/usr/bin/env python3
"""DDP training written the way most scripts are: no torchelastic @record.

Shaped after pytorch/examples' distributed/ddp-tutorial-series/multinode.py (commit
77f55b91, the Trainer at lines 17-89): the process group comes from the environment
torchrun sets (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR), the data is sharded by a
DistributedSampler, every rank prints "[RANK<global rank>] Epoch ..." lines, and
nothing records the exception of a failing rank in an error file. CPU only (gloo).

To see how failures are reported:

  --fail_rank R --fail_step K   rank R raises a RuntimeError at its step K
  --kill_rank R --fail_step K   rank R is killed by SIGKILL at its step K (as the
                                OOM killer does)
  --fail_rank -2                every rank raises at step K, at once

    wick run -s local_cwd dist.ddp -j 2x2 --tee 1 --env PET_REDIRECTS=1 \
        --script examples/ddp/multinode.py -- 5 --fail_rank 3 --fail_step 3

Needs PyTorch (Debian: apt-get install python3-torch).
"""

import argparse
import os
import signal
import time

import torch
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class MyTrainDataset(Dataset):
    """Random pairs, as datautils.py of the tutorial series."""

    def __init__(self, size):
        g = torch.Generator().manual_seed(0)
        self.data = [(torch.rand(20, generator=g), torch.rand(1, generator=g)) for _ in range(size)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


class Trainer:
    def __init__(self, model, train_data, optimizer, args):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.train_data = train_data
        self.optimizer = optimizer
        self.args = args
        self.step = 0
        self.model = DDP(model)

    def _run_batch(self, source, targets):
        self.step += 1
        a = self.args
        if self.step == a.fail_step:
            if a.fail_rank in (self.global_rank, -2):
                raise RuntimeError(f"loss diverged on rank {self.global_rank} at step {self.step}")
            if a.kill_rank == self.global_rank:
                os.kill(os.getpid(), signal.SIGKILL)
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(source), targets)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[RANK{self.global_rank}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}", flush=True)
        self.train_data.sampler.set_epoch(epoch)
        loss = 0.0
        for source, targets in self.train_data:
            loss = self._run_batch(source, targets)
            if self.args.step_delay > 0:
                time.sleep(self.args.step_delay)
        print(f"[RANK{self.global_rank}] Epoch {epoch} | loss {loss:.5f}", flush=True)

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


def main():
    p = argparse.ArgumentParser(description="simple distributed training job")
    p.add_argument("total_epochs", type=int, help="Total epochs to train the model")
    p.add_argument("--batch_size", default=32, type=int, help="Input batch size on each device")
    p.add_argument("--samples", default=512, type=int, help="samples in the dataset")
    p.add_argument("--step_delay", default=0.0, type=float, help="seconds to sleep after each step")
    p.add_argument("--fail_rank", default=-1, type=int, help="the global rank that raises (-2: all)")
    p.add_argument("--kill_rank", default=-1, type=int, help="the global rank killed by SIGKILL")
    p.add_argument("--fail_step", default=3, type=int, help="the step at which it fails")
    args = p.parse_args()

    init_process_group(backend="gloo")
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    dataset = MyTrainDataset(args.samples)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=False, sampler=DistributedSampler(dataset))
    Trainer(model, loader, optimizer, args).train(args.total_epochs)
    destroy_process_group()


if __name__ == "__main__":
    main()
