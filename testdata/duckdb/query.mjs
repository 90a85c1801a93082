// Runs one SQL statement with a real DuckDB, in the current directory (so
// relative globs such as 'eval_results/quickstart/*/results.parquet' work
// as they do for a user), and prints the rows as one JSON array. Usage:
// node /path/to/query.mjs 'SELECT …'
//
// Numbers DuckDB cannot hold in a JS double come back as decimal strings,
// as getRowObjectsJson gives them.
import { DuckDBInstance } from '@duckdb/node-api';

if (process.argv.length !== 3) {
  console.error('usage: node query.mjs SQL');
  process.exit(2);
}
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const reader = await conn.runAndReadAll(process.argv[2]);
console.log(JSON.stringify(reader.getRowObjectsJson()));
