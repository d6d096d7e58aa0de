package sched

// The Scheduler interface is what every scheduler must do. Beyond it, a scheduler may
// implement optional capabilities; the Runner (and the log readers) look for each with
// a type assertion and fall back when it is missing. What a user loses without each,
// and which schedulers have it today:
//
//   - Killer (Kill): `wick cancel --now` stops every replica at once, without the
//     grace period. Without it, Runner.Kill is an error saying so and
//     nothing is stopped; Cancel (with its grace period) still works.
//     local_cwd, local_dir, local_docker.
//
//   - UsageReader (Usage): the CPU and RSS of each running replica, in `wick status`,
//     the app list, describe and the wall's pane titles. Without it those columns are
//     left out (Runner.Usage wraps runner.ErrNoUsage). local_cwd, local_dir,
//     local_docker; slurm has none (its nodes are other machines).
//
//   - MultiLogger (LogsOf): the logs of many replicas opened in one go (one read of
//     the app's state instead of one per replica), which `wick log` of several replicas
//     uses. Without it the Runner opens them one by one: the same
//     lines, more work. local_cwd, local_dir.
//
//   - RawLogReader (RawLog): one stream of a replica read as stored, for `wick log` of
//     one replica with no filter: a copy of the file instead of line-by-line parsing.
//     Without it `wick log` reads through Logs (runner.ErrNoRawLog), slower on big logs.
//     local_cwd, local_dir; slurm when one of the replica's two files holds its lines.
//
//   - RunReader (NextRun, on a LogIterator): a replica's lines a run at a time (those
//     that share a time), which `wick log` of several replicas merges in time order
//     instead of line by line. Without it the merge goes through engine/logs.Merge:
//     the same order, about twice the time. local (through engine/logs).
//
//   - Readier (Ready, on a LogIterator): whether Next would return at once. The wall
//     takes lines in batches with it and engine/logs.Merge keeps several replicas in
//     time order; without it the wall reads one line per wake-up and a merge orders
//     lines as they arrive. Every scheduler's iterators should have it: local (through
//     engine/logs), local_docker and slurm do.
//
//   - SelfRunner (RunSelf): wick itself run in a replica's place on another machine
//     (wick stack's reader on a Slurm node). Without it wick stack samples there with
//     the place's own py-spy or gdb, through Execer. slurm.
//
// docs/architecture.md's "Adding a scheduler" walks through writing one.
