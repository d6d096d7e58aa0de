package form_test

import (
	"testing"

	"github.com/wick-dev/wick/internal/viewtest"
)

func TestMain(m *testing.M) { viewtest.Main(m) }
