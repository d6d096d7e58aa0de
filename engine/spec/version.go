package spec

// Version is wick's version, printed by `wick version` and put on the containers and
// state wick writes.
const Version = "0.1.0"
