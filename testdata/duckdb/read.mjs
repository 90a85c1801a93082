// Reads nel Parquet files with a real DuckDB and prints, per file, one JSON
// object on its own line: what runtime/results/duckdb_test.go compares with
// what it wrote. Usage: node read.mjs FILE...
//
// Numbers DuckDB cannot hold in a JS double (BIGINT sums) come back as
// decimal strings, as getRowObjectsJson gives them.
import { DuckDBInstance } from '@duckdb/node-api';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node read.mjs FILE...');
  process.exit(2);
}

// lit quotes a string as a SQL literal.
const lit = (s) => "'" + s.replaceAll("'", "''") + "'";
// ident quotes a column name.
const ident = (s) => '"' + s.replaceAll('"', '""') + '"';

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const rows = async (sql) => (await conn.runAndReadAll(sql)).getRowObjectsJson();

for (const file of files) {
  const src = `read_parquet(${lit(file)})`;
  const out = { file };

  out.columns = (await rows(`DESCRIBE SELECT * FROM ${src}`)).map((r) => ({
    name: r.column_name,
    type: r.column_type,
  }));
  out.rows = Number((await rows(`SELECT count(*) AS n FROM ${src}`))[0].n);

  // The key-value metadata, keys and values decoded from BLOB to text.
  out.metadata = {};
  for (const r of await rows(
    `SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${lit(file)})`,
  )) {
    out.metadata[r.k] = r.v;
  }

  // Per column: byte length sums for text, sums for numbers, so that the
  // test checks every value, not only the first rows.
  const aggs = [];
  for (const { name, type } of out.columns) {
    const c = ident(name);
    if (type === 'VARCHAR') aggs.push(`sum(strlen(${c}))::VARCHAR AS ${ident('len:' + name)}`);
    if (type === 'BIGINT') aggs.push(`sum(${c})::VARCHAR AS ${ident('sum:' + name)}`);
    if (type === 'DOUBLE') aggs.push(`sum(${c}) AS ${ident('sum:' + name)}`);
  }
  out.aggregates = aggs.length ? (await rows(`SELECT ${aggs.join(', ')} FROM ${src}`))[0] : {};

  const names = new Set(out.columns.map((c) => c.name));
  // Per text column, how many values are NULL (category is NULL where an
  // item has none, not '').
  out.nulls = {};
  for (const { name, type } of out.columns) {
    if (type !== 'VARCHAR') continue;
    const c = ident(name);
    out.nulls[name] = Number((await rows(`SELECT count(*) FILTER (WHERE ${c} IS NULL) AS n FROM ${src}`))[0].n);
  }
  if (names.has('reward')) {
    const r = (await rows(
      `SELECT avg(reward) AS avg_reward, count(*) FILTER (WHERE correct IS NULL) AS null_correct,
              count(*) FILTER (WHERE correct) AS true_correct FROM ${src}`,
    ))[0];
    out.avg_reward = r.avg_reward;
    out.null_correct = Number(r.null_correct);
    out.true_correct = Number(r.true_correct);
  }
  if (names.has('scores')) {
    // map_extract only works on a real MAP column: it proves the type,
    // and the sums prove the entries.
    out.score_sums = {};
    for (const r of await rows(
      `SELECT k, sum(v) AS total, count(*) AS n FROM (
         SELECT unnest(map_keys(scores)) AS k, unnest(map_values(scores)) AS v FROM ${src})
       GROUP BY k ORDER BY k`,
    )) {
      out.score_sums[r.k] = { sum: r.total, count: Number(r.n) };
    }
    const m = (await rows(
      `SELECT sum(map_extract(scores, 'scorer:exact_match')[1]) AS s,
              count(*) FILTER (WHERE cardinality(scores) = 0) AS empty FROM ${src}`,
    ))[0];
    out.exact_match_sum = m.s;
    out.empty_scores = Number(m.empty);
  }

  // The first rows' text columns, in file order, to compare exactly.
  const text = out.columns.filter((c) => c.type === 'VARCHAR').map((c) => ident(c.name));
  out.head = text.length
    ? await rows(
        `SELECT ${text.join(', ')} FROM read_parquet(${lit(file)}, file_row_number = true)
         WHERE file_row_number < 3 ORDER BY file_row_number`,
      )
    : [];

  console.log(JSON.stringify(out));
}
conn.closeSync();
instance.closeSync();
