#!/usr/bin/env python3
"""A DDP script whose worker on one node fails to import a module that node lacks.

    wick run dist.ddp -j 2x1 --tee 1 --env PET_REDIRECTS=1 \
        --script examples/failures/import_error.py

Node 1's worker raises ModuleNotFoundError before init_process_group; node 0 waits
for it in the rendezvous of its workers. wick fails the app as soon as node 1's
torchrun reports the failure, with node 1's cause, and stops node 0.
"""

import os

import torch
import torch.distributed as dist

if os.environ.get("GROUP_RANK", "0") == "1":
    import apex_fused_adam_missing  # noqa: F401  (only node 0 has it installed)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(2) * rank
    dist.all_reduce(t)
    print(f"rank {rank}: sum {t.tolist()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
