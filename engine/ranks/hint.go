package ranks

import "strings"

// TeeWorkaround is what to do when torchrun crashes on its --tee/--redirects options.
const TeeWorkaround = "torchrun crashed parsing --tee/--redirects (a defect of torch 1.13 on Python 3.11; dist.ddp passes --tee 3): run dist.ddp with --tee 1 --env PET_REDIRECTS=1"

// Hint names the workaround for a failure of torchrun itself that wick recognizes in a
// replica's error (a torchelastic error file's JSON, or text), or returns "".
//
// Debian's torch 1.13 on Python 3.11 fails in torchrun before starting any worker when
// --tee is 3 or --redirects 0: to_map calls .get on None and the agent dies with
// "AttributeError: 'NoneType' object has no attribute 'get'".
func Hint(errText string) string {
	if strings.Contains(errText, "'NoneType' object has no attribute 'get'") && strings.Contains(errText, "to_map") {
		return TeeWorkaround
	}
	return ""
}
