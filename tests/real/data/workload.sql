-- SQL workload for tests/test_real_suites.py: the sqlite3 shell on a database file (rollback
-- journal, then WAL), with integrity checks before and after the heavy statements. Every
-- query has an ORDER BY, so the output is the same under every correct allocator.
.bail on
.headers on
.mode list
PRAGMA foreign_keys = ON;
PRAGMA cache_size = 200;            -- a small page cache: pages are read and evicted often

CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, joined TEXT);
CREATE TABLE products(id INTEGER PRIMARY KEY, title TEXT UNIQUE, price INTEGER, tags TEXT);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                    product_id INTEGER REFERENCES products(id), qty INTEGER, note TEXT);
CREATE INDEX orders_customer ON orders(customer_id);
CREATE INDEX orders_product ON orders(product_id, qty);
CREATE TABLE audit(id INTEGER PRIMARY KEY, what TEXT, n INTEGER);
CREATE TRIGGER orders_del AFTER DELETE ON orders BEGIN
    INSERT INTO audit(what, n) VALUES ('delete', old.id);
END;
CREATE VIEW revenue AS
    SELECT c.city, p.title, o.qty * p.price AS amount
    FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.id = o.product_id;

BEGIN;
WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 5000)
INSERT INTO customers SELECT n, 'customer-' || n, 'city-' || (n * 13 % 41),
       date('2000-01-01', '+' || (n * 37 % 8000) || ' days') FROM seq;
WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 800)
INSERT INTO products SELECT n, printf('product %04d %s', n, substr('abcdefghij', n % 10 + 1)),
       100 + n * 7919 % 9000, json_array('t' || (n % 7), 't' || (n % 11)) FROM seq;
WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 60000)
INSERT INTO orders SELECT n, 1 + n * 7919 % 5000, 1 + n * 104729 % 800, 1 + n % 9,
       printf('note %d %s %s', n, hex(n * 31), substr('lorem ipsum dolor sit amet', 1 + n % 20)) FROM seq;
COMMIT;
PRAGMA integrity_check;

SELECT count(*) AS orders, sum(qty) AS items, min(note) AS first_note, max(note) AS last_note FROM orders;
SELECT city, count(*) AS n, sum(amount) AS total, round(avg(amount), 3) AS mean
FROM revenue GROUP BY city ORDER BY total DESC, city LIMIT 8;
SELECT title, rank() OVER (ORDER BY total DESC, title) AS r, total FROM
  (SELECT title, sum(amount) AS total FROM revenue GROUP BY title) ORDER BY r LIMIT 6;
SELECT c.name, group_concat(o.id, ',') AS ids FROM customers c
  JOIN (SELECT * FROM orders ORDER BY id) o ON o.customer_id = c.id
  WHERE c.id IN (1, 2, 3, 4999) GROUP BY c.id ORDER BY c.id;
SELECT j.value AS tag, count(*) AS n FROM products, json_each(products.tags) AS j
  GROUP BY j.value ORDER BY n DESC, tag LIMIT 5;
SELECT substr(joined, 1, 4) AS year, count(*) AS n,
       sum(count(*)) OVER (ORDER BY substr(joined, 1, 4)) AS running
  FROM customers GROUP BY year ORDER BY year LIMIT 5;

-- Updates, deletes through a trigger, an upsert, a self-join.
UPDATE orders SET qty = qty + 1 WHERE id % 3 = 0;
DELETE FROM orders WHERE id % 5 = 0;
INSERT INTO products(id, title, price, tags) VALUES (1, 'replacement', 1, '[]')
  ON CONFLICT(id) DO UPDATE SET price = excluded.price + products.price;
SELECT count(*) AS audited, min(n), max(n) FROM audit;
SELECT count(*) AS orders, sum(qty) FROM orders;
SELECT a.id, b.id FROM customers a JOIN customers b ON a.city = b.city AND a.id < b.id
  WHERE a.id < 60 AND b.id < 200 ORDER BY a.id, b.id LIMIT 5;

-- Big rows: text and blobs across overflow pages, rewritten and shrunk.
CREATE TABLE big(k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID;
WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 400)
INSERT INTO big SELECT printf('key-%05d', n), replace(hex(zeroblob(n * 97 % 10000)), '00', 'ab') || printf('%08d', n) FROM seq;
UPDATE big SET v = substr(v, 1, length(v) / 2) WHERE k LIKE '%3';
SELECT count(*), sum(length(v)), max(length(v)), hex(substr(max(v), -8)) FROM big;
DELETE FROM big WHERE k > 'key-00200';
PRAGMA integrity_check;
PRAGMA foreign_key_check;

-- Schema changes, WAL, VACUUM, REINDEX, ANALYZE; then everything checked again.
ALTER TABLE customers ADD COLUMN score INTEGER DEFAULT 0;
UPDATE customers SET score = (SELECT count(*) FROM orders WHERE customer_id = customers.id);
CREATE INDEX customers_score ON customers(score DESC, name);
SELECT name, score FROM customers ORDER BY score DESC, name LIMIT 3;
PRAGMA journal_mode = WAL;
BEGIN;
DELETE FROM orders WHERE customer_id % 7 = 0;
INSERT INTO orders(customer_id, product_id, qty, note)
  SELECT customer_id, product_id, qty, 'copy ' || note FROM orders WHERE id % 11 = 0;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
PRAGMA journal_mode = DELETE;
VACUUM;
REINDEX;
ANALYZE;
SELECT tbl, idx FROM sqlite_stat1 ORDER BY tbl, idx;
SELECT count(*), sum(qty), sum(length(note)) FROM orders;
PRAGMA integrity_check;
PRAGMA foreign_key_check;
SELECT 'done';
