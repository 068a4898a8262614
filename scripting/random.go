package scripting

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// rand48 is the generator behind a script's math.random, Redis's
// redisLrand48: the 48-bit linear congruential generator of POSIX
// lrand48 (X = a*X + c mod 2^48, a = 0x5DEECE66D, c = 0xB), each draw the
// top 31 bits of X. Every interpreter has its own, so a seed a script
// sets (math.randomseed) gives the same numbers as on Redis, and two
// servers in one process share nothing.
type rand48 struct{ x uint64 }

// newRand48 starts where Redis's generator starts before any seed.
func newRand48() *rand48 { return &rand48{x: 0x1234_ABCD_330E} }

// seed is srand48's: the seed's 32 bits above 0x330E.
func (r *rand48) seed(s int32) { r.x = uint64(uint32(s))<<16 | 0x330E }

// next draws a number in [0, 2^31).
func (r *rand48) next() int64 {
	r.x = (0x5DEECE66D*r.x + 0xB) & (1<<48 - 1)
	return int64(r.x >> 17)
}

// openRandom replaces math.random and math.randomseed in math with Redis's,
// on a generator of their own. gopher-lua's seed the process-wide
// math/rand source, which Go ignores (rand.Seed is a no-op since Go 1.24).
func openRandom(L *lua.LState, math *lua.LTable) {
	r := newRand48()
	math.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		const max = 1<<31 - 1 // REDIS_LRAND48_MAX
		f := float64(r.next()%max) / max
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(f))
		case 1:
			u := checkIntOf(L, 1, "random")
			if u < 1 {
				L.RaiseError("bad argument #1 to 'random' (interval is empty)")
			}
			L.Push(lua.LNumber(floor(f*float64(u)) + 1))
		case 2:
			l, u := checkIntOf(L, 1, "random"), checkIntOf(L, 2, "random")
			if l > u {
				L.RaiseError("bad argument #2 to 'random' (interval is empty)")
			}
			L.Push(lua.LNumber(floor(f*float64(int64(u)-int64(l)+1)) + float64(l)))
		default:
			L.RaiseError("wrong number of arguments")
		}
		return 1
	}))
	math.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		r.seed(int32(checkIntOf(L, 1, "randomseed")))
		return 0
	}))
}

func floor(f float64) float64 { return math.Floor(f) }
