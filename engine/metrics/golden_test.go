package metrics

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/extract.golden with what the extractor gives now")

const (
	corpusFile = "testdata/extract_corpus.txt"
	goldenFile = "testdata/extract.golden"
	// mutationsPerLine is how many mutated copies of each corpus line are checked.
	mutationsPerLine = 6
	// pairLines is how many lines of random names, separators, values and ends are
	// checked.
	pairLines = 6000
)

// TestExtractGolden pins what the extractor reads from a large, varied set of lines,
// under the default configuration and two others, so that a change made for speed can
// be shown to read exactly what it read before. The cases are the corpus's lines,
// mutations of them, lines built of random names, separators and values, and a few
// long lines; testdata/extract.golden holds every case whose result is not empty.
// After a change of behaviour that is meant, rewrite it with -update and review the
// diff.
func TestExtractGolden(t *testing.T) {
	cases := goldenCases(t)
	exts := goldenExtractors(t)
	// One Parsed per configuration for every case, as a Store reuses its own: what one
	// line leaves in it must not change what the next line gives.
	var ps [3]Parsed
	var b strings.Builder
	fmt.Fprintf(&b, "# %d cases from %s; a line per case with a result: case, then what the\n", len(cases), corpusFile)
	fmt.Fprintf(&b, "# default config, an \"only\" config and an \"ignore\" config read (see golden_test.go).\n")
	for i, c := range cases {
		var r [3]string
		for k, e := range exts {
			r[k] = render(e, c, &ps[k])
		}
		if r != [3]string{} {
			fmt.Fprintf(&b, "%d\t%s\t%s\t%s\n", i, r[0], r[1], r[2])
		}
	}
	if *update {
		if err := os.WriteFile(goldenFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	gotLines, wantLines := strings.Split(b.String(), "\n"), strings.Split(string(want), "\n")
	if len(gotLines) != len(wantLines) || b.String() != string(want) {
		// Show the first differences with the lines that made them.
		wantBy := goldenByCase(wantLines)
		gotBy := goldenByCase(gotLines)
		bad := 0
		for i, c := range cases {
			if g, w := gotBy[i], wantBy[i]; g != w {
				t.Errorf("case %d %q:\n got  %s\n want %s", i, c, g, w)
				if bad++; bad == 20 {
					t.Fatal("more differences left out")
				}
			}
		}
		if bad == 0 {
			t.Fatalf("%s differs from what the cases give, beyond the results (header?): rewrite it with -update", goldenFile)
		}
	}
}

// goldenByCase indexes golden lines by case number.
func goldenByCase(lines []string) map[int]string {
	m := map[int]string{}
	for _, l := range lines {
		n, rest, ok := strings.Cut(l, "\t")
		if i, err := strconv.Atoi(n); ok && err == nil {
			m[i] = rest
		}
	}
	return m
}

// goldenExtractors are the configurations of TestExtractGolden: the default, one that
// takes only some names (with step keys of its own and a pattern), and one that
// ignores some names and makes epoch a step.
func goldenExtractors(t *testing.T) [3]*Extractor {
	only, err := ParseConfig(map[string]string{
		"metrics":     "loss, Eval_Loss, tok/s, acc, it/s, epoch, x_id",
		"step":        "batch, iter",
		"pattern.top": `top-1 acc (\S+)%`,
	})
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := ParseConfig(map[string]string{
		"ignore": "lr, grad_norm, Train_Loss",
		"step":   "epoch, Step",
	})
	if err != nil {
		t.Fatal(err)
	}
	onlyExt := NewExtractor(only)
	// What the lines say, however slow the machine (-race makes RE2 many times
	// slower): the pattern's time budget is TestStoreSlowPatternSkipped's.
	onlyExt.lineBudget, onlyExt.meanBudget = time.Hour, time.Hour
	return [3]*Extractor{NewExtractor(DefaultConfig()), onlyExt, NewExtractor(ignore)}
}

// render writes what a line gave, exactly: the step, the local rank and each value
// as the shortest decimal that reads back the same.
func render(e *Extractor, line string, p *Parsed) string {
	e.Extract(line, p)
	var b []byte
	if p.HasStep {
		b = append(b, "step="...)
		b = strconv.AppendInt(b, p.Step, 10)
		b = append(b, ' ')
	}
	if p.Local >= 0 {
		b = append(b, "local="...)
		b = strconv.AppendInt(b, int64(p.Local), 10)
		b = append(b, ' ')
	}
	for _, s := range p.Samples {
		b = strconv.AppendQuote(b, s.Name)
		b = append(b, '=')
		b = AppendValue(b, s.Value)
		b = append(b, ' ')
	}
	return strings.TrimSuffix(string(b), " ")
}

// readCorpus returns the lines of the corpus.
func readCorpus(t testing.TB) []string {
	f, err := os.Open(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && l[0] != '#' {
			s, err := strconv.Unquote(l)
			if err != nil {
				t.Fatalf("%s: %q: %v", corpusFile, l, err)
			}
			lines = append(lines, s)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// goldenCases reads the corpus and derives the other cases from it, the same on every
// run: a fixed seed.
func goldenCases(t testing.TB) []string {
	base := readCorpus(t)
	r := rand.New(rand.NewPCG(2026, 11))
	cases := append([]string(nil), base...)
	for _, s := range base {
		for range mutationsPerLine {
			cases = append(cases, mutate(r, s, base))
		}
	}
	for range pairLines {
		cases = append(cases, pairLine(r))
	}
	// Long lines: the bounds on bytes and values.
	cases = append(cases,
		strings.Repeat("w 0.5 ", 2000),
		strings.Repeat("loss=1 ", MaxValuesPerLine+3),
		strings.Repeat("1.5it/s ", MaxValuesPerLine+3),
		strings.Repeat("x", MaxLineBytes-6)+" loss 1.5",
		strings.Repeat(" ", MaxLineBytes-8)+"loss 1.2345 lr 2",
		strings.Repeat(" ", MaxLineBytes-4)+"lr 12345",
		strings.Repeat("a", 5000)+" loss 1",
		"loss "+strings.Repeat("9", 5000),
		strings.Repeat("1 ", 3000),
		strings.Repeat("\r", 5000)+"loss 1 lr 2",
		strings.Repeat("[0]:", 2000),
	)
	return cases
}

// Pieces of pairLine and mutate: what the extractor treats specially.
var (
	goldenNames = []string{
		"loss", "Loss", "LOSS", "lr", "LR", "grad_norm", "tok/s", "it/s", "s/it", "eval_loss", "train_loss",
		"eval loss", "Eval Loss", "train loss", "val acc", "test loss", "training done", "validation loss",
		"train", "eval", "step", "Step", "STEP", "global_step", "iter", "it", "steps", "iteration", "batch",
		"epoch", "Epoch", "pid", "port", "rank", "world_size", "x_id", "master_port", "batch_size", "seed",
		"a", "the", "The", "create", "x", "version", "max", "mem", "acc", "train/loss", "val.acc", "a-b",
		"_x", "x1", "name.", "name-", "name/", "tokens_per_sec", "top-1 acc", "q", "é", "nan", "inf", "e",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	}
	goldenSeps = []string{
		" ", "  ", "\t", "=", " = ", ": ", ":", " : ", ":  ", "==", "=:", "", "': ", `": `, `":`, `' : `,
		"'=", " '", ` "`, "-", "_", ".", "/", "|", ", ",
	}
	goldenValues = []string{
		"1", "0", "-1", "+1", "2.84", "-2.5", ".5", "5.", "-.5", "1e-4", "1E4", "6.3e-05", "1e+05", "1e",
		"1e-", "1.2.3", "1..2", "nan", "NaN", "NAN", "-nan", "inf", "-inf", "+Inf", "Infinity", "-infinity",
		"infinityy", "infin", "nanx", "1e400", "-1e400", "5e-324", "1e-400", "0x1f", "1_000", "1,000",
		"12:00", "20/1000", "20/", "5%", "'1'", `"2"`, "'3", "007", "123456789012345678901234567890",
		"1234567890123456789012345678901234567890", "12345678901234567890123456789012345678901",
		"9007199254740993", "3.0", "100", "48213", "N/A", "none", "x", "",
	}
	goldenEnds = []string{
		"", " ", ",", ", ", ";", "|", ")", "]", "}", `"`, "'", "%", "%%", "/10", "x", ".", ":", ":5",
		"\r", "\t", "s", "it/s", "s/it", ",5", " it/s", "ms", "GB", "-", "/", "e5",
	}
	goldenPrefixes = []string{
		"", "", "", "[0]:", "[default3]:", "[trainer 12]: ", "  ", "{", "{'", `{"`, "(", "[", "eval ",
		"step 5 ", "Epoch 1: 50%|###  | 5/10 [00:01<00:01, 5.00it/s, ", "\r", "x\rloss 9 ", "[rank 1] ",
		"INFO:torch.distributed.run:", "a 1 ", "pid 3 ",
	}
	goldenJoins  = []string{" ", ", ", " | ", "\t", ",", "; ", " - ", "  ", ""}
	goldenTokens = []string{
		" ", "=", ":", ": ", ",", ";", "|", ")", "]", "}", `"`, "'", "%", "/", ".", "-", "+", "e", "E", "\r",
		"\t", "[", "{", "(", "0", "1", "9", "nan", "inf", "Infinity", "1e-4", "it/s", "s/it", "[3]:",
		"eval ", "train_", "_id", "step ", "loss ", "Loss=", "0.5", "/100", "é", "\x00", "\xff",
	}
)

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

// pairLine builds a line of one to three name-value pairs.
func pairLine(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString(pick(r, goldenPrefixes))
	n := 1 + r.IntN(3)
	for i := range n {
		if i > 0 {
			b.WriteString(pick(r, goldenJoins))
		}
		b.WriteString(pick(r, goldenNames))
		b.WriteString(pick(r, goldenSeps))
		b.WriteString(pick(r, goldenValues))
		b.WriteString(pick(r, goldenEnds))
	}
	return b.String()
}

// mutate changes one to three things in s: a byte replaced, a token inserted, a span
// deleted, upper-cased or doubled, the line cut, or another line's end spliced on.
func mutate(r *rand.Rand, s string, lines []string) string {
	for range 1 + r.IntN(3) {
		i := 0
		if len(s) > 0 {
			i = r.IntN(len(s) + 1)
		}
		j := min(len(s), i+1+r.IntN(8))
		switch r.IntN(7) {
		case 0:
			if i < len(s) {
				s = s[:i] + pick(r, goldenTokens)[:1] + s[i+1:]
			}
		case 1:
			s = s[:i] + pick(r, goldenTokens) + s[i:]
		case 2:
			s = s[:i] + s[j:]
		case 3:
			s = s[:i] + strings.ToUpper(s[i:j]) + s[j:]
		case 4:
			s = s[:j] + s[i:j] + s[j:]
		case 5:
			s = s[:i]
		case 6:
			o := pick(r, lines)
			s = s[:i] + o[r.IntN(len(o)+1):]
		}
	}
	return s
}
