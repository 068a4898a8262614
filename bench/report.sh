#!/usr/bin/env bash
# report.sh CSV...: the table compare.sh prints, from one or more of its CSV
# files. Runs of the same (server, load, pipeline, keys) are averaged; every
# ratio divides figures of the same run of compare.sh (same CSV file).
#
# Columns: req/s, p50 and p99 in ms, then
#   xINCR   req/s over Redis INCR (same pipeline and keys)
#   xLua    req/s over the Redis Lua script doing the same job (GCRA for
#           CL.THROTTLE, TB.TAKE and SW.INCR; sorted-set log for SL.INCR)
#   xCL     req/s over limitdb's own CL.THROTTLE (the 80% goal)
#   p99/R   p99 over Redis INCR's p99 (lower is better)
#   xBef    req/s over the same load on the "before" binary (BEFORE_BIN)
#   x1p     (multi mode) req/s over the same load with GOMAXPROCS=1
#   cpu     server CPU time per request, microseconds (all threads)
#   cINCR   Redis INCR's cpu over this cpu: requests per core-second
#           relative to Redis INCR, the figure that survives a busy machine
#   cLua    the same against the Lua script;  cBef  against "before"
set -euo pipefail
for f in "$@"; do
  awk -F, -v file="$f" '
    NR == 1 || $7 == "not available" { if ($7 == "not available") na[$5 " " $6] = 1; next }
    {
      k = $5 SUBSEP $6 SUBSEP $3 SUBSEP $4
      if (!(k in n)) order[++rows] = k
      n[k]++; rps[k] += $7; p50[k] += $8; p99[k] += $9; cpu[k] += $10
    }
    function avg(a, k) { return (k in n) ? a[k] / n[k] : 0 }
    function ratio(x, y) { return (x > 0 && y > 0) ? sprintf("%.2f", x / y) : "-" }
    END {
      printf "%s\n", file
      printf "%-11s %-12s %3s %-4s %10s %7s %7s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s\n",
        "server", "load", "P", "keys", "req/s", "p50", "p99", "xINCR", "xLua", "xCL", "p99/R", "xBef", "x1p", "cpu", "cINCR", "cLua", "cBef"
      for (i = 1; i <= rows; i++) {
        split(order[i], f, SUBSEP)
        s = f[1]; l = f[2]; p = f[3]; ks = f[4]; k = order[i]
        r = avg(rps, k)
        incr = "redis" SUBSEP "INCR" SUBSEP p SUBSEP ks
        lua = ""
        if (l == "CL.THROTTLE" || l == "TB.TAKE" || l == "SW.INCR") lua = "redis" SUBSEP "lua-gcra" SUBSEP p SUBSEP ks
        if (l == "SL.INCR") lua = "redis" SUBSEP "lua-slog" SUBSEP p SUBSEP ks
        if (l == "INCR") lua = incr
        xi = xl = xc = pr = x1 = xb = ci = cl = cb = "-"
        c = avg(cpu, k)
        if (s != "redis") {
          xi = ratio(r, avg(rps, incr))
          if (lua != "") xl = ratio(r, avg(rps, lua))
          xc = ratio(r, avg(rps, s SUBSEP "CL.THROTTLE" SUBSEP p SUBSEP ks))
          pr = ratio(avg(p99, k), avg(p99, incr))
          one = "limitdb-1p" SUBSEP l SUBSEP p SUBSEP ks
          if (s == "limitdb-2p") x1 = ratio(r, avg(rps, one))
          bef = "before" SUBSEP l SUBSEP p SUBSEP ks
          if (s != "before" && (bef in n)) xb = ratio(r, avg(rps, bef))
          ci = ratio(avg(cpu, incr), c)
          if (lua != "") cl = ratio(avg(cpu, lua), c)
          if (s != "before" && (bef in n)) cb = ratio(avg(cpu, bef), c)
        }
        printf "%-11s %-12s %3s %-4s %10.0f %7.3f %7.3f %6s %6s %6s %6s %6s %6s %6.2f %6s %6s %6s\n",
          s, l, p, ks, r, avg(p50, k), avg(p99, k), xi, xl, xc, pr, xb, x1, c, ci, cl, cb
      }
      for (x in na) printf "not available: %s\n", x
    }' "$f"
done
