-- SQL workload for the "real programs" test (sqlite3 CLI, in-memory database).
CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
                    amount INTEGER, note TEXT);
CREATE INDEX orders_customer ON orders(customer_id);

WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 3000)
INSERT INTO customers(id, name, city)
SELECT n, 'customer-' || n, 'city-' || (n % 37) FROM seq;

WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 20000)
INSERT INTO orders(id, customer_id, amount, note)
SELECT n, 1 + (n * 7919) % 3000, (n * 104729) % 1000, printf('note %d %s', n, hex(n * 31))
FROM seq;

SELECT count(*), sum(amount), min(amount), max(amount) FROM orders;

SELECT c.city, count(o.id) AS n, sum(o.amount) AS total
FROM customers c JOIN orders o ON o.customer_id = c.id
GROUP BY c.city ORDER BY total DESC, c.city LIMIT 10;

SELECT c.name, group_concat(o.id, ',') FROM customers c
JOIN orders o ON o.customer_id = c.id
WHERE c.id IN (1, 2, 3, 2999) GROUP BY c.id ORDER BY c.id;

UPDATE orders SET amount = amount + 1 WHERE id % 3 = 0;
DELETE FROM orders WHERE id % 5 = 0;
SELECT count(*), sum(amount) FROM orders;

CREATE TABLE big(k TEXT PRIMARY KEY, v BLOB);
WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 2000)
INSERT INTO big SELECT 'key' || n, zeroblob(100 + n % 3000) FROM seq;
SELECT count(*), sum(length(v)) FROM big;

SELECT customer_id, amount, rank() OVER (PARTITION BY customer_id ORDER BY amount DESC, id) r
FROM orders WHERE customer_id < 4 ORDER BY customer_id, r LIMIT 12;

VACUUM;
PRAGMA integrity_check;
