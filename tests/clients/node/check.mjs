// node-postgres and postgres.js checks of the client suite (tests/clients.rs runs them).
// Usage: node check.mjs <check>, connection from PGHOST / PGPORT / PGUSER / PGDATABASE.
// Prints the rows the client returned as JSON; tests/clients.rs compares tarn's output with
// PostgreSQL 15's, so nothing here is an expected value.
import pg from 'pg';
import postgres from 'postgres';

const conn = {
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT),
  user: process.env.PGUSER,
  database: process.env.PGDATABASE,
};

async function withPg(fn) {
  const client = new pg.Client(conn);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function withPostgresJs(fn) {
  const sql = postgres({ ...conn, max: 1, onnotice: () => {} });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

const checks = {
  // No parameters: node-postgres sends a simple Query.
  'pg-simple': () => withPg(async (c) =>
    (await c.query('select id, customer, amount, placed from cl_orders order by id')).rows),
  // Parameters: an unnamed extended-protocol statement.
  'pg-params': () => withPg(async (c) =>
    (await c.query('select id, customer, amount from cl_orders where id = $1 or customer = $2 or amount > $3 order by id',
      [1, 'globex', 200])).rows),
  // A named prepared statement, executed twice.
  'pg-prepared': () => withPg(async (c) => {
    const q = (id) => ({ name: 'cl_by_id', text: 'select customer, amount from cl_orders where id = $1', values: [id] });
    return [(await c.query(q(2))).rows, (await c.query(q(3))).rows];
  }),
  // A transaction rolled back: the row is gone.
  'pg-transaction': () => withPg(async (c) => {
    await c.query('begin');
    await c.query('insert into cl_orders (id, customer) values ($1, $2)', [100, 'temp']);
    const inside = (await c.query('select count(*)::int as n from cl_orders')).rows;
    await c.query('rollback');
    const after = (await c.query('select count(*)::int as n from cl_orders')).rows;
    return { inside, after };
  }),
  // Tagged templates: automatically prepared (named) statements, run twice.
  'postgres-js-query': () => withPostgresJs(async (sql) => {
    const q = (min) => sql`select id, customer, amount, placed from cl_orders where id > ${min} order by id`;
    return [await q(0), await q(1)];
  }),
  // Parameter and result types.
  'postgres-js-types': () => withPostgresJs(async (sql) =>
    await sql`select ${'x'}::text as t, ${42}::int as n, ${'1.50'}::numeric as d, ${true}::boolean as b,
                     ${'2024-01-02'}::date as day`),
  // sql.begin: committed on success, rolled back on an exception.
  'postgres-js-transaction': () => withPostgresJs(async (sql) => {
    await sql.begin(async (tx) => {
      await tx`insert into cl_orders_js (id, note) values (${1}, ${'kept'})`;
    });
    try {
      await sql.begin(async (tx) => {
        await tx`insert into cl_orders_js (id, note) values (${2}, ${'dropped'})`;
        throw new Error('roll back');
      });
    } catch (e) {
      if (e.message !== 'roll back') throw e;
    }
    return await sql`select id, note from cl_orders_js order by id`;
  }),
};

const name = process.argv[2];
if (!checks[name]) {
  console.error(`unknown check ${name}; known: ${Object.keys(checks).join(', ')}`);
  process.exit(2);
}
try {
  const result = await checks[name]();
  console.log(JSON.stringify(result, null, 1));
} catch (e) {
  console.error(`${name} failed: ${e.code ?? ''} ${e.message}`);
  process.exit(1);
}
