-- Differential corpus: each query runs on PostgreSQL over tables, on Brook ad hoc over
-- tables, and on Brook continuously (a materialized view over a stream fed by COPY in
-- random chunks); all three answers must be equal (as multisets).
-- {t} is the events relation (id int, k text, v int NULL, price numeric(8,2), ts timestamp);
-- dim(k text, region text, weight int) is a table. Lines starting with [adhoc] are not yet
-- run continuously: Brook must refuse them there with 0A000 (and answer ad hoc).
-- filters
SELECT id, k, v FROM {t} WHERE v > 50
SELECT id FROM {t} WHERE v IS NULL
SELECT id, v FROM {t} WHERE v BETWEEN 10 AND 20 AND k <> 'c'
SELECT id FROM {t} WHERE k IN ('a', 'b') OR v < 3
SELECT id, price FROM {t} WHERE price >= 50.5
SELECT id FROM {t} WHERE NOT (v > 10)
SELECT id, k FROM {t} WHERE k LIKE 'a%' OR k LIKE '%h'
SELECT id FROM {t} WHERE ts >= TIMESTAMP '2026-01-01 00:02:00' AND ts < TIMESTAMP '2026-01-01 00:03:00'
SELECT id FROM {t} WHERE v % 7 = 3
SELECT id, v FROM {t} WHERE COALESCE(v, -1) < 0
-- projections and scalar functions
SELECT id, v * 2 + 1 AS w FROM {t}
SELECT id, upper(k) AS uk, length(k) AS lk FROM {t}
SELECT id, CASE WHEN v > 50 THEN 'high' WHEN v > 20 THEN 'mid' ELSE 'low' END AS band FROM {t}
SELECT id, abs(v - 50) AS dist FROM {t} WHERE v IS NOT NULL
SELECT id, price * 2 AS double_price FROM {t}
SELECT id, k || '-' || CAST(v AS text) AS label FROM {t}
SELECT id, v / 3 AS third, v % 3 AS rest FROM {t}
SELECT id, COALESCE(v, 0) + id AS s FROM {t}
SELECT id, date_bin(INTERVAL '1 minute', ts, TIMESTAMP '2026-01-01 00:00:00') AS minute FROM {t}
SELECT id, NULLIF(v, 0) AS nz FROM {t}
-- timestamp differences are intervals; intervals scale
SELECT id, ts - TIMESTAMP '2026-01-01 00:00:00' AS since FROM {t}
SELECT id, ts - TIMESTAMP '2025-12-30 12:00:00' AS since, TIMESTAMP '2025-12-30' - ts AS back FROM {t}
SELECT id, extract(epoch FROM ts - TIMESTAMP '2026-01-01 00:00:00') AS secs FROM {t}
SELECT id, (ts - TIMESTAMP '2026-01-01 00:00:00') * 2 AS twice, (ts - TIMESTAMP '2026-01-01 00:00:00') / 3 AS third FROM {t}
SELECT id FROM {t} WHERE ts - TIMESTAMP '2026-01-01 00:00:00' > INTERVAL '2 minutes 30 seconds'
SELECT k, max(ts) - min(ts) AS span FROM {t} GROUP BY k
-- aggregates
SELECT count(*) FROM {t}
SELECT count(v), sum(v), min(v), max(v) FROM {t}
SELECT k, count(*) FROM {t} GROUP BY k
SELECT k, sum(v) FROM {t} GROUP BY k
SELECT k, min(v), max(v) FROM {t} GROUP BY k
SELECT k, avg(v) FROM {t} GROUP BY k
SELECT k, sum(price) FROM {t} GROUP BY k
SELECT k, count(DISTINCT v) FROM {t} GROUP BY k
SELECT v % 5 AS m, count(*) FROM {t} GROUP BY v % 5
SELECT k, count(*) FILTER (WHERE v > 50) AS high FROM {t} GROUP BY k
SELECT k, sum(v) FROM {t} GROUP BY k HAVING sum(v) > 5000
SELECT k, count(*) FROM {t} WHERE v > 10 GROUP BY k HAVING count(*) > 100
SELECT k, v IS NULL AS missing, count(*) FROM {t} GROUP BY k, v IS NULL
SELECT count(*) AS n, count(DISTINCT k) AS keys FROM {t}
SELECT k, max(price) - min(price) AS spread FROM {t} GROUP BY k
-- distinct
SELECT DISTINCT k FROM {t}
SELECT DISTINCT k, v % 2 AS parity FROM {t}
SELECT DISTINCT v FROM {t} WHERE v < 10
-- windows via standard constructs
SELECT date_bin(INTERVAL '30 seconds', ts, TIMESTAMP '2026-01-01 00:00:00') AS w, count(*) FROM {t} GROUP BY 1
SELECT date_bin(INTERVAL '1 minute', ts, TIMESTAMP '2026-01-01 00:00:00') AS w, k, sum(v) FROM {t} GROUP BY 1, 2
SELECT date_bin(INTERVAL '1 minute', ts, TIMESTAMP '2026-01-01 00:00:00') AS w, max(v), min(price) FROM {t} GROUP BY 1
SELECT date_trunc('minute', ts) AS m, count(*) FROM {t} GROUP BY 1
SELECT date_bin(INTERVAL '10 seconds', ts, TIMESTAMP '2026-01-01 00:00:00') AS w, count(DISTINCT k) FROM {t} GROUP BY 1
SELECT w, count(*) FROM (SELECT date_bin(INTERVAL '20 seconds', ts, TIMESTAMP '2026-01-01 00:00:00') AS w, k FROM {t} WHERE v > 30) s GROUP BY w
-- joins with a table
SELECT e.id, d.region FROM {t} e JOIN dim d ON e.k = d.k
SELECT e.id, d.region, e.v * d.weight AS score FROM {t} e JOIN dim d ON e.k = d.k WHERE e.v > 40
SELECT d.region, count(*) FROM {t} e JOIN dim d ON e.k = d.k GROUP BY d.region
SELECT d.region, sum(e.v * d.weight) FROM {t} e JOIN dim d ON e.k = d.k GROUP BY d.region
SELECT e.id FROM {t} e JOIN dim d ON e.k = d.k AND e.v > d.weight
SELECT e.k, d.region, count(*) FROM {t} e, dim d WHERE e.k = d.k AND e.v < 10 GROUP BY e.k, d.region
SELECT d.region, avg(e.v) FROM dim d JOIN {t} e ON d.k = e.k GROUP BY d.region
SELECT x.region, x.n FROM (SELECT d.region, count(*) AS n FROM {t} e JOIN dim d ON e.k = d.k GROUP BY d.region) x WHERE x.n > 100
SELECT e.id, d.region FROM {t} e LEFT JOIN dim d ON e.k = d.k WHERE e.v > 80
SELECT d.k, count(e.id) FROM dim d LEFT JOIN {t} e ON d.k = e.k AND e.v > 98 GROUP BY d.k
SELECT e.id FROM {t} e WHERE e.k IN (SELECT k FROM dim WHERE weight > 1) AND e.v < 5
SELECT e.id, d.region FROM {t} e FULL JOIN dim d ON e.k = d.k AND e.v > 95
SELECT d.region, count(e.id) FROM {t} e FULL JOIN dim d ON e.k = d.k GROUP BY d.region
SELECT e.id FROM {t} e WHERE e.v > 90 AND NOT EXISTS (SELECT 1 FROM dim d WHERE d.k = e.k AND d.weight > 2)
SELECT d.k FROM dim d WHERE NOT EXISTS (SELECT 1 FROM {t} e WHERE e.k = d.k AND e.v > 99)
SELECT e.id, e.v FROM {t} e WHERE e.v NOT IN (SELECT weight FROM dim)
SELECT d.k, d.weight FROM dim d WHERE d.weight NOT IN (SELECT v FROM {t})
SELECT d.k FROM dim d WHERE d.weight NOT IN (SELECT v FROM {t} WHERE v IS NOT NULL AND v < 3)
-- unions and subqueries
SELECT id, k FROM {t} WHERE v > 90 UNION ALL SELECT id, k FROM {t} WHERE v < 5
SELECT k, count(*) FROM (SELECT k, v FROM {t} WHERE v > 50 UNION ALL SELECT k, v FROM {t} WHERE v IS NULL) u GROUP BY k
SELECT n, count(*) FROM (SELECT k, count(*) AS n FROM {t} GROUP BY k) g GROUP BY n
SELECT k, total FROM (SELECT k, sum(v) AS total FROM {t} GROUP BY k) s WHERE total > 1000
SELECT k, hi FROM (SELECT k, max(v) AS hi FROM {t} WHERE v IS NOT NULL GROUP BY k) s
SELECT m, count(*) FROM (SELECT id, v % 4 AS m FROM {t}) s GROUP BY m
-- OVER frames, running aggregates, LAG/LEAD, ranking
SELECT id, sum(v) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running FROM {t}
SELECT id, lag(v) OVER (PARTITION BY k ORDER BY id) AS prev FROM {t}
SELECT id, avg(v) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS moving FROM {t}
SELECT id, count(*) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS recent FROM {t}
SELECT id, lead(v, 2) OVER (PARTITION BY k ORDER BY id) AS next2 FROM {t}
SELECT id, row_number() OVER (PARTITION BY k ORDER BY id) AS rn FROM {t}
