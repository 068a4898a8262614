// Package archtest holds the tests that keep the project's shape: imports
// flow one way, no package keeps mutable state at package level or fills a
// registry from init(), only the clock package reads the time, and only
// programs choose the real clock. It has no code of its own.
package archtest
