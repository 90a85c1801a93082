// Times DuckDB doing what `nel-run merge` does over a benchmark's results
// shards: the reference figure for nel-run merge
// (cmd/nel-run/merge_bench_test.go). One run is, on one DuckDB instance
// (start-up excluded), from submission to the last row read:
//   - the statistics nel's merge computes from the rows: per item (over
//     the scored rows) count, mean reward and correct count; the headline
//     mean and its standard deviation over items; the same per category;
//     latency p50/p90/p99, mean and max; the median decode rate; token
//     sums; counts by finish reason, attempts, error category and outcome;
//   - the merged results file: every row, sorted by item_idx, item_id,
//     repeat, written as zstd Parquet (nel writes results.parquet so);
//   - the merged trajectories: nel copies the shards' trajectories row
//     groups byte for byte, so here the same bytes are copied as files
//     (fs.copyFileSync), the cheapest way to move them.
// nel's merge also checks completeness and computes bootstrap intervals;
// DuckDB is given none of that extra work.
// Prints one JSON object: {"runs": [seconds...], "median_s": s,
// "count": n, "stats_s": [...], "write_s": [...], ...}.
// Usage: node bench.mjs RUNS OUTDIR FILE...  (FILE: a shard's results file;
// its trajectories are FILE with .parquet replaced by .trajectories.parquet)
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

const [runsArg, outDir, ...files] = process.argv.slice(2);
if (!runsArg || !outDir || files.length === 0) {
  console.error('usage: node bench.mjs RUNS OUTDIR FILE...');
  process.exit(2);
}
const runs = Number(runsArg);
const lit = (s) => "'" + s.replaceAll("'", "''") + "'";
const src = `read_parquet([${files.map(lit).join(', ')}])`;
const merged = join(outDir, 'results.parquet');

// scored: outcome scored or model_error (infra_error rows are not scored).
const statsQuery = `WITH items AS (
    SELECT item_idx, item_id, any_value(category) AS category, count(*) AS n,
      avg(reward) AS mean, count(*) FILTER (WHERE reward > 0) AS correct
    FROM ${src} WHERE outcome IN ('scored', 'model_error')
    GROUP BY item_idx, item_id)
  SELECT category, count(*) AS items, sum(n) AS samples, sum(correct) AS correct,
    avg(mean) AS score, stddev_samp(mean) AS sd
  FROM items GROUP BY ROLLUP (category) ORDER BY category NULLS FIRST`;
const runtimeQuery = `SELECT count(*) AS n, avg(reward) AS mean_reward,
    quantile_cont(latency_ms, [0.5, 0.9, 0.99]) AS latency_q,
    avg(latency_ms) AS latency_mean, max(latency_ms) AS latency_max,
    quantile_cont(completion_tokens / (latency_ms / 1000), 0.5)
      FILTER (WHERE latency_ms > 0 AND completion_tokens > 0) AS decode_p50,
    sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion,
    sum(reasoning_tokens) AS reasoning
  FROM ${src}`;
const countsQuery = `SELECT 'finish' AS k, finish_reason AS v, count(*) AS n FROM ${src} GROUP BY ALL
  UNION ALL SELECT 'attempts', CAST(attempts AS VARCHAR), count(*) FROM ${src} GROUP BY ALL
  UNION ALL SELECT outcome, error_category, count(*) FROM ${src} WHERE error_category <> '' GROUP BY ALL`;
const copyQuery = `COPY (SELECT * FROM ${src} ORDER BY item_idx, item_id, repeat)
  TO ${lit(merged)} (FORMAT parquet, COMPRESSION zstd)`;

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const seconds = (t) => Number(process.hrtime.bigint() - t) / 1e9;

const times = [], statsTimes = [], writeTimes = [];
let rt, byCategory;
for (let i = 0; i < runs; i++) {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const start = process.hrtime.bigint();
  byCategory = (await conn.runAndReadAll(statsQuery)).getRowObjectsJson();
  rt = (await conn.runAndReadAll(runtimeQuery)).getRowObjectsJson()[0];
  await conn.runAndReadAll(countsQuery);
  statsTimes.push(seconds(start));
  const w = process.hrtime.bigint();
  await conn.run(copyQuery);
  for (const f of files) {
    const t = f.replace(/\.parquet$/, '.trajectories.parquet');
    copyFileSync(t, join(outDir, basename(t)));
  }
  writeTimes.push(seconds(w));
  times.push(seconds(start));
}
rmSync(outDir, { recursive: true, force: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(JSON.stringify({
  runs: times,
  median_s: median(times),
  stats_s: statsTimes,
  write_s: writeTimes,
  count: Number(rt.n),
  mean_reward: rt.mean_reward,
  latency_q: rt.latency_q,
  headline: byCategory[0],
}));
conn.closeSync();
instance.closeSync();
