// Times DuckDB computing count, mean and percentiles over a benchmark's
// results shards: the reference figure for nel-run merge
// (cmd/nel-run/merge_bench_test.go). Prints one JSON object:
// {"runs": [seconds...], "median_s": s, "count": n, ...}; each run is one
// query, timed from submission to the last row read, on one DuckDB
// instance (start-up excluded).
// Usage: node bench.mjs RUNS FILE...
import { DuckDBInstance } from '@duckdb/node-api';

const [runsArg, ...files] = process.argv.slice(2);
if (!runsArg || files.length === 0) {
  console.error('usage: node bench.mjs RUNS FILE...');
  process.exit(2);
}
const runs = Number(runsArg);
const lit = (s) => "'" + s.replaceAll("'", "''") + "'";

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const query = `SELECT count(*) AS n, avg(reward) AS mean_reward,
  quantile_cont(latency_ms, [0.5, 0.9, 0.99]) AS latency_q
  FROM read_parquet([${files.map(lit).join(', ')}])`;

const times = [];
let result;
for (let i = 0; i < runs; i++) {
  const start = process.hrtime.bigint();
  result = (await conn.runAndReadAll(query)).getRowObjectsJson()[0];
  times.push(Number(process.hrtime.bigint() - start) / 1e9);
}
const sorted = [...times].sort((a, b) => a - b);
console.log(JSON.stringify({
  runs: times,
  median_s: sorted[Math.floor(sorted.length / 2)],
  count: Number(result.n),
  mean_reward: result.mean_reward,
  latency_q: result.latency_q,
}));
conn.closeSync();
instance.closeSync();
