package metrics

import (
	"bytes"
	"strings"
)

// defaultIgnore are names whose numbers are not metrics.
var defaultIgnore = []string{
	"pid", "ppid", "port", "rank", "local_rank", "node_rank", "group_rank", "world_size",
	"local_world_size", "nproc", "nproc_per_node", "nnodes", "seed", "epoch", "epochs",
	"gpu", "gpus", "device", "cuda", "worker", "workers", "line", "version", "id",
	// torchrun's agent prints its configuration at LOGLEVEL=INFO.
	"min_nodes", "max_nodes", "max_restarts", "monitor_interval", "restart_count", "timeout",
	"elapsed", "role_world_size", "group_world_size", "nnodes_min", "nnodes_max",
	"attempt", "restart", "restarts", "done", "exitcode", "exit_code", "code", "errno", "signal",
	// Counters of frameworks: DeepSpeed's skipped steps and micro steps, fairseq's
	// batch size, Lightning's version and dataloader index, HF's fractional epoch.
	"skipped", "micro_step", "bsz", "v_num", "dataloader", "update", "eta", "best_epoch",
	// An estimate of the time left, as eta (InsightFace's `Required: 38 hours`).
	"required", "remaining", "time_left", "time_remaining",
	// A time of day (StyleGAN's metric lines' Unix time).
	"timestamp",
	// The share of the run done (fastText's `Progress: 45.2%`): the bar's position.
	"progress",
	// NCCL_DEBUG=INFO's communicator lines.
	"nranks", "cudadev", "busid", "nvmldev", "comm", "channel", "nchannels",
}

// settingWords are words of names that count or size things: settings and counters,
// not metrics (global batch size, num_examples, consumed samples, v_num).
var settingWords = map[string]bool{
	"size": true, "sizes": true, "examples": true, "epochs": true, "steps": true,
	"parameters": true, "params": true, "workers": true, "gpus": true, "devices": true,
	"nodes": true, "iterations": true, "instances": true, "zeros": true, "seed": true,
	"version": true, "id": true, "rank": true, "ranks": true, "port": true, "pid": true,
	"addr": true, "samples": true, "num": true, "number": true, "count": true,
	"classes": true, "images": true, "tokens": true, "layers": true, "heads": true,
	"dim": true, "shards": true, "sents": true, "sentences": true, "updates": true,
	"timesteps": true, "consumed": true, "seen": true, "episodes": true,
	// A graph's sizes (DGL's NumEdges, NumFeats) and a tensor's shape.
	"edges": true, "feats": true, "features": true, "shape": true,
	// A best value so far is a record of an earlier one (Marian's `last best: 181.03`).
	"best": true,
	// A count of a tensor's channels (GAN tutorials' channels=1), of the thousands of
	// images shown (NVlabs' StyleGAN and EDM trainers' kimg).
	"channels": true, "kimg": true,
}

// countedWords are the last words of a name that counts what training went through
// (Composer's time/batch, time/sample_in_epoch, time/token): a counter, not a metric,
// unless a time is counted per one of them (ms/batch).
var countedWords = map[string]bool{
	"batch": true, "sample": true, "token": true, "batch_in_epoch": true,
	"sample_in_epoch": true, "token_in_epoch": true, "epoch": true,
}

// isSetting reports whether a lowercase name (words joined by _ . - / or space) names
// a setting or a counter by its words: one of them is in settingWords, or its last is
// epoch. A rate is a metric whatever it counts (samples_per_second, tokens/s), and so
// is a loss (epoch_loss).
func isSetting(name []byte) bool {
	if len(name) >= 4 && string(name[len(name)-4:]) == "loss" {
		return false
	}
	if perSecond(name) {
		return false // tok/s, samples/sec
	}
	if k := bytes.LastIndexByte(name, '/'); k > 0 {
		switch string(name[:k]) {
		case "ms", "s", "sec", "us":
			return false // ms/batch, sec/kimg: a time per batch, per thousand images
		}
		if countedWords[string(name[k+1:])] {
			return true
		}
	}
	if bytes.Contains(name, []byte("per_sec")) || bytes.Contains(name, []byte("persec")) {
		return false
	}
	return settingByWords(name)
}

// perSecond reports whether a name is a rate written with a slash: tok/s, samples/sec.
func perSecond(name []byte) bool {
	for i := 0; i+1 < len(name); i++ {
		if name[i] == '/' && name[i+1] == 's' && (i+2 == len(name) || name[i+2] == '_' || name[i+2] == '/' || bytes.HasPrefix(name[i+1:], []byte("sec"))) {
			return true
		}
	}
	return false
}

// settingByWords reports whether the words of a name (joined by _ . - / or space) make
// it a setting or a counter (see isSetting), unless one of them makes it the run's
// health (nan, inf) or a retrieval's rank statistic.
func settingByWords(name []byte) bool {
	setting := false
	total := false // a word total: with flops last, the compute spent so far (OLMo's total_training_Gflops)
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) {
			if c := name[i]; c != '_' && c != '.' && c != '-' && c != ' ' && c != '/' {
				continue
			}
		}
		w := string(name[start:i])
		if w == "nan" || w == "inf" {
			// Megatron's `number of nan iterations`: a count of NaN steps is the
			// run's health, not a setting (the Store raises an alarm when it is not 0).
			return false
		}
		if w == "rank" && statistic(name[:max(0, start-1)]) {
			return false // OpenCLIP's image_to_text_mean_rank: retrieval's mean rank
		}
		// The first word of a namespace's name is first too (Baselines' misc/nupdates).
		first := start == 0 || name[start-1] == '/'
		setting = setting || settingWords[w] || i == len(name) && w == "epoch" || countWords(w, first, i == len(name)) ||
			sizeWord(w) || first && i < len(name) && w == "max" && recordOf(name[i+1:]) ||
			total && i == len(name) && strings.HasSuffix(w, "flops")
		total = total || w == "total"
		start = i + 1
	}
	return setting
}

// sizeWord reports whether a word names a size (a camel-case name lowercased whole:
// batchSize is batchsize, imgSize imgsize).
func sizeWord(w string) bool {
	return len(w) > len("size") && strings.HasSuffix(w, "size")
}

// recordOf reports whether the words after max make a best so far of a measure that
// grows (Swin's `Max accuracy: 81.17%`), not a peak of memory (max_mem).
func recordOf(rest []byte) bool {
	switch string(rest) {
	case "accuracy", "acc", "acc1", "acc@1", "auc", "f1", "map", "bleu", "psnr", "ssim", "score", "dice", "iou":
		return true
	}
	return false
}

// countWords reports whether a word of a name makes it a count of what training went
// through: a count written n or num before its word (Tianshou's n_ep, n_st, Baselines'
// nupdates, numsteps), and, as the last word of a name of several, the episodes or the
// weights counted (env_episode, MaxText's total_weights: the tokens weighed).
func countWords(w string, first, last bool) bool {
	switch {
	case first && !last && (w == "n" || w == "num"):
		return true
	case first && len(w) > 1 && w[0] == 'n' && (settingWords[w[1:]] || w[1:] == "epoch" || w[1:] == "iter"):
		return true // nupdates, nsteps, nsamples, nepoch
	case first && len(w) > 3 && strings.HasPrefix(w, "num") && settingWords[w[3:]]:
		return true
	case last && !first && (w == "episode" || w == "episodes" || w == "weights"):
		return true
	}
	return false
}

// stopWords are words that precede numbers in prose, never metrics when only a space
// separates them from the number: "create 8 workers", "is 4", "of 10".
var stopWords = []string{
	"a", "an", "the", "is", "are", "was", "were", "be", "of", "to", "in", "on", "at", "by",
	"for", "with", "from", "than", "and", "or", "into", "over", "after", "before", "every",
	"each", "all", "only", "about", "per", "use", "using", "create", "created", "has",
	"have", "had", "got", "found", "expected", "received", "took", "takes", "max", "min",
	"total", "last", "first", "top", "x", "line", "see", "version", "python",
}

// qualifiers are the words of a context: they name the series (val/loss) of the name
// that follows them, or of the whole line.
var qualifiers = []string{
	"train", "training", "eval", "evaluation", "val", "valid", "validation", "validate",
	"validating", "evaluating", "test", "testing", "dev", "cv",
}

// canonQualifier is the series prefix of a qualifier ("" for training).
func canonQualifier(q []byte) string {
	switch string(q) {
	case "train", "training":
		return "train"
	case "eval", "evaluation", "evaluating":
		return "eval"
	case "val", "valid", "validation", "validate", "validating", "dev", "cv":
		return "val"
	case "test", "testing":
		return "test"
	}
	return ""
}

// counterWords count what is done of a total (`epoch 3/10`): their count is their value.
var counterWords = map[string]bool{
	"step": true, "iter": true, "iteration": true, "it": true, "batch": true, "epoch": true,
	"global_step": true, "update": true, "updates": true,
}

// isModifier reports whether a word is dropped from the front of a name of several
// words: `Average loss` is the loss.
func isModifier(w []byte) bool {
	switch string(w) {
	case "average", "avg", "mean", "current":
		return true
	}
	return false
}

// maxQualifierLen bounds the words looked up as qualifiers: none is longer.
const maxQualifierLen = 16

// commonNames are interned so that extracting them allocates nothing.
var commonNames = []string{
	"loss", "lr", "grad_norm", "tok/s", "it/s", "s/it", "eval/loss", "train/loss",
	"val/loss", "test/loss", "learning_rate", "accuracy", "acc", "ppl", "perplexity",
	"throughput", "samples/s", "mfu", "step_time", "data_time", "time", "memory", "mem",
	"lm_loss", "nll_loss", "norm", "tps", "tflops", "data", "val/accuracy", "test/accuracy",
}

// knownMetrics may stand alone after a space: `val loss 5.32` is a value even as the
// only pair of its line, where `create 8 workers` is prose.
var knownMetrics = map[string]bool{
	"loss": true, "lr": true, "acc": true, "accuracy": true, "ppl": true, "perplexity": true,
	"grad_norm": true, "mfu": true,
}

// CanonicalName is the name under which a metric written name is kept: lowercased,
// its qualifier a prefix (`eval_loss`, `Eval Loss` and `eval/loss` are eval/loss;
// `valid_loss` is val/loss). A configuration's names go through it too.
func CanonicalName(name string) string {
	var buf [MaxNameLen + 16]byte
	lw, _ := appendLower(buf[:0], strings.TrimSpace(name))
	for i, c := range lw {
		if c == ' ' {
			lw[i] = '_'
		}
	}
	q, rest := splitQualifier(lw)
	if q == "" {
		return string(lw)
	}
	return q + "/" + string(rest)
}

// ownerOf is the owner of a possessive name (`valid_0's`): a split without the index of
// its data set (valid_0 is valid, training stays training).
func ownerOf(o string) string {
	k := strings.LastIndexByte(o, '_')
	if k <= 0 || k == len(o)-1 {
		return o
	}
	for i := k + 1; i < len(o); i++ {
		if !isDigit(o[i]) {
			return o
		}
	}
	return o[:k]
}

// splitQualifier splits a lowercase name into its context and the rest: val_loss is
// val and loss. A name that is only a qualifier has none.
func splitQualifier(name []byte) (string, []byte) {
	for i := 0; i < len(name) && i <= maxQualifierLen; i++ {
		if c := name[i]; c == '_' || c == '/' || c == '.' || c == ' ' || c == '-' {
			if q := canonQualifier(name[:i]); q != "" && i+1 < len(name) {
				return q, name[i+1:]
			}
			break
		}
	}
	// After the name, with a space or _ (litgpt's `loss train`, `loss_val`).
	for i := len(name) - 1; i > 0 && len(name)-i <= maxQualifierLen; i-- {
		if c := name[i]; c == '_' || c == ' ' {
			if q := canonQualifier(name[i+1:]); q != "" {
				return q, name[:i]
			}
			break
		}
		if c := name[i]; c == '/' || c == '.' || c == '-' {
			break
		}
	}
	return "", name
}

// mayQualify is a quick look at a word: whether it may be a qualifier (its length and
// first letter), before it is lowercased and looked up.
func mayQualify(s string, w span) bool {
	if n := w.end - w.start; n < 2 || n > 10 {
		return false
	}
	switch s[w.start] | 0x20 {
	case 't', 'e', 'v', 'd', 'c':
		return true
	}
	return false
}

// isQualifier reports whether a word is a qualifier.
func isQualifier(s string, w span) bool {
	if !mayQualify(s, w) {
		return false
	}
	var b [maxQualifierLen]byte
	lw, _ := appendLower(b[:0], s[w.start:w.end])
	return canonQualifier(lw) != ""
}

// lastWord returns the last word of a lowercase name (words joined by _).
func lastWord(name []byte) []byte {
	return name[bytes.LastIndexByte(name, '_')+1:]
}

// statistic reports whether a name's last word is a statistic's (mean, median): of
// ranks, a metric (mean rank).
func statistic(name []byte) bool {
	switch string(lastWord(name)) {
	case "mean", "median", "avg", "average":
		return true
	}
	return false
}

// trimModifiers drops modifiers before a name (`average_loss` is the loss),
// Megatron's `value` written as a word after it (`lm loss value`; spacedValue, not
// PyTorch-GAN's clip_value) and `taken` after a time (CycleGAN's `Time Taken: 412 sec`
// is the time).
func trimModifiers(name []byte, spacedValue bool) []byte {
	for {
		k := 0
		for k < len(name) && name[k] != '_' {
			k++
		}
		if k < len(name) && isModifier(name[:k]) && string(name[k+1:]) != "rank" {
			name = name[k+1:]
			continue
		}
		break
	}
	if n := len(name) - len("_value"); n > 0 && spacedValue && string(name[n:]) == "_value" {
		name = name[:n]
	}
	if string(name) == "time_taken" {
		name = name[:len("time")]
	}
	return name
}

// joinWords appends the lowercase words of text (one space apart), joined by _, to b;
// ok is false when the name is too long or empty.
func joinWords(b []byte, text string) ([]byte, bool) {
	for text != "" {
		w, rest, _ := strings.Cut(text, " ")
		if o, ok := strings.CutSuffix(w, "'s"); ok && o != "" {
			w = ownerOf(o) // LightGBM's `valid_0's auc` is valid's auc
		}
		if len(b) > 0 {
			b = append(b, '_')
		}
		if len(b)+len(w) > MaxNameLen {
			return nil, false
		}
		b, _ = appendLower(b, w)
		text = rest
	}
	return b, len(b) > 0
}

// qualifiedPath reports whether a name of segments (loss/train/total) has a qualifier
// among them: it names its context itself.
func qualifiedPath(name []byte) bool {
	if bytes.IndexByte(name, '/') < 0 {
		return false
	}
	for _, seg := range bytes.Split(name, []byte("/")) {
		if canonQualifier(seg) != "" {
			return true
		}
	}
	return false
}

// hasIgnoredSuffix reports whether a name ends like an id.
func hasIgnoredSuffix(name []byte) bool {
	for _, suf := range ignoredSuffixes {
		if len(name) >= len(suf) && string(name[len(name)-len(suf):]) == suf {
			// A statistic of ranks is a metric: retrieval's mean rank.
			return suf != "_rank" || !statistic(name[:len(name)-len(suf)])
		}
	}
	return false
}

// ignoredSuffixes mark ids: master_port, worker_pid, global_rank, job_id.
var ignoredSuffixes = []string{"_pid", "_port", "_rank", "_id", "_addr"}
