package gpus

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// smi answers as nvidia-smi would with the fixtures given per argument list.
func smi(t *testing.T, answers map[string]string) Runner {
	return func(_ context.Context, args ...string) ([]byte, error) {
		name, ok := answers[strings.Join(args, " ")]
		if !ok {
			return nil, errors.New("exit status 9")
		}
		return fixture(t, name), nil
	}
}

func noEnv(string) (string, bool) { return "", false }

func TestParseListCountsGPUsNotMIGDevices(t *testing.T) {
	// One A100 with seven MIG devices is one GPU, index 0.
	if got := ParseList(fixture(t, "smi-L-mig.txt")); !slices.Equal(got, []string{"0"}) {
		t.Errorf("MIG machine: %q, want [0]", got)
	}
	if got := ParseList(fixture(t, "smi-L-one.txt")); !slices.Equal(got, []string{"0"}) {
		t.Errorf("laptop: %q, want [0]", got)
	}
	if got := ParseList([]byte("No devices were found\n")); got != nil {
		t.Errorf("no devices: %q", got)
	}
}

func TestParseQuery(t *testing.T) {
	if got := ParseQuery(fixture(t, "query-gpu-mig.csv")); !slices.Equal(got, []string{"0"}) {
		t.Errorf("%q, want [0]", got)
	}
	// The header line ("index, uuid") is not a GPU.
	if got := ParseQuery(fixture(t, "query-gpu-header.csv")); !slices.Equal(got, []string{"0", "1"}) {
		t.Errorf("%q, want [0 1]", got)
	}
}

func TestParseVisible(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"1", []string{"1"}},
		{"2, 0", []string{"2", "0"}},
		{"GPU-48aeb943-9458-4282-da24-e5f49e0db44b,GPU-1b724e78-eef5-4163-d43c-e4da15d41176",
			[]string{"GPU-48aeb943-9458-4282-da24-e5f49e0db44b", "GPU-1b724e78-eef5-4163-d43c-e4da15d41176"}},
		{"MIG-fb42055e-9e53-5764-9278-438605a3014c", []string{"MIG-fb42055e-9e53-5764-9278-438605a3014c"}},
		{"", nil},
		{"-1", nil},
		{"0,-1,1", []string{"0"}},
	} {
		if got := ParseVisible(c.in); !slices.Equal(got, c.want) {
			t.Errorf("ParseVisible(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPool(t *testing.T) {
	ctx := context.Background()
	query := "--query-gpu=index,uuid --format=csv,noheader"
	// nvidia-smi's query first.
	f := Finder{Getenv: noEnv, Run: smi(t, map[string]string{query: "query-gpu-header.csv", "-L": "smi-L-one.txt"})}
	if got := f.Pool(ctx); !slices.Equal(got, []string{"0", "1"}) {
		t.Errorf("query: %q", got)
	}
	// An nvidia-smi without the query: the GPU lines of -L, not the MIG ones.
	f.Run = smi(t, map[string]string{"-L": "smi-L-mig.txt"})
	if got := f.Pool(ctx); !slices.Equal(got, []string{"0"}) {
		t.Errorf("-L: %q", got)
	}
	// No nvidia-smi: no pool.
	f.Run = smi(t, nil)
	if got := f.Pool(ctx); got != nil {
		t.Errorf("no nvidia-smi: %q", got)
	}
	// The user's CUDA_VISIBLE_DEVICES is the pool, and nothing else: one GPU of two.
	f.Run = smi(t, map[string]string{query: "query-gpu-header.csv"})
	f.Getenv = func(k string) (string, bool) { return map[string]string{EnvVisible: "1"}[k], k == EnvVisible }
	if got := f.Pool(ctx); !slices.Equal(got, []string{"1"}) {
		t.Errorf("CUDA_VISIBLE_DEVICES=1: %q", got)
	}
	// Set and empty: no GPU for this user.
	f.Getenv = func(k string) (string, bool) { return "", k == EnvVisible }
	if got := f.Pool(ctx); got != nil {
		t.Errorf("CUDA_VISIBLE_DEVICES='': %q", got)
	}
}

func TestSplit(t *testing.T) {
	pool := []string{"MIG-a", "MIG-b", "MIG-c"}
	got, ok := Split(pool, []int{1, 2})
	if !ok || !slices.Equal(got[0], []string{"MIG-a"}) || !slices.Equal(got[1], []string{"MIG-b", "MIG-c"}) {
		t.Errorf("Split = %q, %v", got, ok)
	}
	// A slice handed out cannot grow into its neighbour's.
	_ = append(got[0], "x")
	if pool[1] != "MIG-b" {
		t.Error("a slice's append wrote into the pool")
	}
	if _, ok := Split(pool, []int{2, 2}); ok {
		t.Error("4 of 3 devices handed out")
	}
}
