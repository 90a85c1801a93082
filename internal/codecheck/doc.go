// Package codecheck holds tests over the repository itself: the rules of
// its layout (which tree may import which, ARCHITECTURE.md) and of its
// code, checked on every make test so that they stay true.
package codecheck
