package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Schedule submits the planned job with sbatch --parsable and records it. It sets
// info.AppID to the job id, so that info.Handle() is slurm://SESSION/JOBID.
func (s *Scheduler) Schedule(ctx context.Context, info *sched.DryRunInfo, progress sched.Progress) error {
	req, ok := info.Request.(*Request)
	if !ok {
		return fmt.Errorf("slurm: the request is a %T, not a slurm request", info.Request)
	}
	progress.Report("checking the Slurm controller")
	if err := Ping(ctx); err != nil {
		return err
	}
	s.noteReach(nil) // what follows (an attached run's first status) need not ping again
	if err := os.MkdirAll(req.JobDir, 0o755); err != nil {
		return fmt.Errorf("slurm: job_dir: %w", err)
	}
	progress.Report("submitting to Slurm")
	body := strings.Join(req.Script, "\n") + "\n"
	out, err := command(ctx, strings.NewReader(body), req.Cmd[0], req.Cmd[1:]...)
	if err != nil {
		var ce *CommandError
		var na *NoAnswerError
		switch {
		case errors.As(err, &ce):
			return s.rejected(ctx, ce, req)
		case errors.As(err, &na) && len(req.Replicas) > 0:
			// sbatch may have handed the job over before it stopped answering.
			return fmt.Errorf("slurm: %w; the job may have been submitted all the same: `squeue --me -n %s` shows it", err, req.Replicas[0].JobName)
		}
		return err
	}
	// --parsable prints "JOBID" or "JOBID;CLUSTER".
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if err := validJobID(id); err != nil {
		return fmt.Errorf("slurm: sbatch printed %q, not a job id", strings.TrimSpace(string(out)))
	}
	rec := &record{
		JobID:     id,
		Session:   req.Session,
		App:       req.app,
		Cfg:       spec.CfgStrings(req.cfg),
		JobDir:    req.JobDir,
		BatchLog:  batchLog(req.JobDir, id),
		Script:    req.Script,
		Submitted: time.Now().UTC(),
	}
	for _, r := range req.Replicas {
		r.Stdout = strings.ReplaceAll(r.Stdout, JobIDVar, id)
		r.Stderr = strings.ReplaceAll(r.Stderr, JobIDVar, id)
		r.ExitFile = strings.ReplaceAll(r.ExitFile, JobIDVar, id)
		r.Command = nil
		rec.Replicas = append(rec.Replicas, r)
	}
	info.AppID = id
	if err := s.saveRecord(rec); err != nil {
		// The job runs; without a record wick still finds it in Slurm.
		return fmt.Errorf("slurm: job %s submitted, but %w", id, err)
	}
	return nil
}

// rejected turns sbatch's refusal into one line with Slurm's own message, plus the
// partitions that exist when the partition was the problem.
func (s *Scheduler) rejected(ctx context.Context, ce *CommandError, req *Request) error {
	msg := oneLine(strings.ReplaceAll(ce.Stderr, "sbatch: error: ", ""))
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", ce.Code)
	}
	if strings.Contains(ce.Stderr, "Invalid partition") {
		if p := req.cfg.String(OptPartition); p != "" {
			if parts, err := partitions(ctx); err == nil && len(parts) > 0 {
				msg += fmt.Sprintf("; partition %q%s; known: %s", p, spec.DidYouMean(p, parts), strings.Join(parts, ", "))
			}
		}
	}
	return fmt.Errorf("%w: %s", ErrRejected, msg)
}

// partitions lists the cluster's partitions.
func partitions(ctx context.Context) ([]string, error) {
	out, err := command(ctx, nil, "sinfo", "-h", "-o", "%R")
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !contains(parts, l) {
			parts = append(parts, l)
		}
	}
	return parts, nil
}
