// node-postgres (pg) and postgres.js against tarn or PostgreSQL 15 (tests/clients.rs runs this
// with libpq's PG* environment). One line per check: `ok NAME` or `FAIL NAME: why`.
import pg from 'pg';
import postgres from 'postgres';

const env = process.env;
const config = {
  host: env.PGHOST, port: Number(env.PGPORT), user: env.PGUSER, database: env.PGDATABASE,
};
const T = `cl_node_${process.pid}`;
const checks = [];
const check = (name, fn) => checks.push([name, fn]);
const expect = (cond, message) => { if (!cond) throw new Error(message); };

check('pg_connect_and_query', async () => {
  const c = new pg.Client(config);
  await c.connect();
  try {
    const r = await c.query('SELECT 1 + $1::int AS n', [41]);
    expect(r.rows[0].n === 42, JSON.stringify(r.rows));
  } finally { await c.end(); }
});

check('pg_setup', async () => {
  const c = new pg.Client(config);
  await c.connect();
  try {
    await c.query(`DROP TABLE IF EXISTS ${T}`);
    await c.query(`CREATE TABLE ${T} (id integer PRIMARY KEY, name text NOT NULL, price numeric(8,2), day date)`);
  } finally { await c.end(); }
});

check('pg_parameters_and_row_counts', async () => {
  const c = new pg.Client(config);
  await c.connect();
  try {
    const ins = await c.query(`INSERT INTO ${T} VALUES ($1, $2, $3, $4), ($5, $6, $7, $8)`,
      [1, 'one', '1.50', '2024-01-02', 2, 'two', null, null]);
    expect(ins.rowCount === 2 && ins.command === 'INSERT', `${ins.command} ${ins.rowCount}`);
    const upd = await c.query(`UPDATE ${T} SET name = $1 WHERE id >= $2`, ['x', 1]);
    expect(upd.rowCount === 2, `UPDATE ${upd.rowCount}`);
    const r = await c.query({ text: `SELECT id, name, price FROM ${T} ORDER BY id`, name: 'by_id' });
    expect(JSON.stringify(r.rows) === JSON.stringify([{ id: 1, name: 'x', price: '1.50' }, { id: 2, name: 'x', price: null }]),
      JSON.stringify(r.rows));
  } finally { await c.end(); }
});

check('pg_transaction_rollback', async () => {
  const c = new pg.Client(config);
  await c.connect();
  try {
    await c.query('BEGIN');
    await c.query(`INSERT INTO ${T} (id, name) VALUES (9, 'gone')`);
    await c.query('ROLLBACK');
    const r = await c.query(`SELECT count(*)::int AS n FROM ${T} WHERE id = 9`);
    expect(r.rows[0].n === 0, JSON.stringify(r.rows));
  } finally { await c.end(); }
});

check('pg_pool', async () => {
  const pool = new pg.Pool({ ...config, max: 2 });
  try {
    const rs = await Promise.all([1, 2, 3].map(i => pool.query('SELECT $1::int AS i', [i])));
    expect(rs.map(r => r.rows[0].i).join() === '1,2,3', 'pool results');
  } finally { await pool.end(); }
});

check('postgresjs_connect_and_arrays', async () => {
  const sql = postgres({ ...config, max: 1, onnotice: () => {} });
  try {
    const rows = await sql`SELECT ${[1, 2, 3]}::int[] AS a, ${'x'}::text AS t`;
    expect(JSON.stringify(rows[0].a) === '[1,2,3]' && rows[0].t === 'x', JSON.stringify(rows));
  } finally { await sql.end(); }
});

check('postgresjs_insert_and_select', async () => {
  const sql = postgres({ ...config, max: 1, onnotice: () => {} });
  try {
    await sql`INSERT INTO ${sql(T)} ${sql([{ id: 3, name: 'three' }, { id: 4, name: 'four' }])}`;
    const rows = await sql`SELECT id, name FROM ${sql(T)} WHERE id >= ${3} ORDER BY id`;
    expect(JSON.stringify(rows.map(r => [r.id, r.name])) === '[[3,"three"],[4,"four"]]', JSON.stringify(rows));
  } finally { await sql.end(); }
});

check('pg_teardown', async () => {
  const c = new pg.Client(config);
  await c.connect();
  try { await c.query(`DROP TABLE ${T}`); } finally { await c.end(); }
});

for (const [name, fn] of checks) {
  try {
    await Promise.race([fn(), new Promise((_, rej) => setTimeout(() => rej(new Error('timed out after 30 s')), 30000))]);
    console.log(`ok ${name}`);
  } catch (e) {
    console.log(`FAIL ${name}: ${String(e && e.message || e).replace(/\s+/g, ' ').slice(0, 300)}`);
  }
}
process.exit(0);
