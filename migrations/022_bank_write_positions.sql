-- Read replicas with read-your-writes (db/replicas.py, docs/scaling.md): after a write to a bank
-- commits, and before it is acknowledged, the server records the primary's WAL position here;
-- any server process then reads that bank from a replica only once the replica has replayed past
-- it, else from the primary. Kept on the primary, so a write through one process and a read
-- through another agree. No foreign key: a deleted bank's position stays valid (and tiny), and
-- a bank made again later only moves it forward. Written only when replicas are configured.
CREATE TABLE IF NOT EXISTS bank_positions (
    bank_id text PRIMARY KEY,
    lsn     pg_lsn NOT NULL
);
