// node-postgres (npm `pg`) against Brook: connect, parameters, types, errors.
const test = require('node:test');
const assert = require('node:assert');
const { Client } = require('pg');

const port = Number(process.env.BROOK_PORT);

test('node-postgres round trip', async () => {
  const c = new Client({ host: '127.0.0.1', port, user: 'brook', database: 'brook' });
  await c.connect();
  await c.query('CREATE TABLE n (id int PRIMARY KEY, name text, ok boolean)');
  await c.query('INSERT INTO n VALUES ($1, $2, $3), ($4, $5, $6)', [1, 'one', true, 2, 'two', false]);
  const r = await c.query('SELECT id, name, ok FROM n WHERE id >= $1 ORDER BY id', [1]);
  assert.deepStrictEqual(r.rows, [{ id: 1, name: 'one', ok: true }, { id: 2, name: 'two', ok: false }]);
  const cnt = await c.query('SELECT count(*) FROM n');
  assert.strictEqual(cnt.fields[0].name, 'count');
  assert.strictEqual(cnt.rows[0].count, '2'); // bigint arrives as text, as with PostgreSQL
  await assert.rejects(c.query('SELECT * FROM nope'), (e) => e.code === '42P01');
  await assert.rejects(c.query('INSERT INTO n VALUES (1, $1, true)', ['dup']), (e) => e.code === '23505');
  const again = await c.query('SELECT 1 AS x');
  assert.strictEqual(again.rows[0].x, 1);
  await c.end();
});
