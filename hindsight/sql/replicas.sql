-- Read replicas and read-your-writes (db/replicas.py): where each bank's last write is in the
-- primary's WAL, and how far each replica has replayed it.

-- bank_position --
-- The primary's WAL position after the bank's last acknowledged write; a replica serves the bank's
-- reads only once it has replayed past it.
SELECT lsn FROM bank_positions WHERE bank_id = $1;

-- bank_position_record --
-- After a write to the bank has committed and before it is acknowledged: the end of the WAL
-- inserted so far lies past its commit record, whatever synchronous_commit says.
INSERT INTO bank_positions (bank_id, lsn) VALUES ($1, pg_current_wal_insert_lsn())
ON CONFLICT (bank_id) DO UPDATE SET lsn = greatest(bank_positions.lsn, excluded.lsn);

-- primary_position --
-- How far the primary's WAL reaches now, sampled to tell how far behind each replica is.
SELECT pg_current_wal_insert_lsn();

-- replica_state --
-- Whether a read server is still a standby (a promoted one is not), and how far it has replayed.
SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn() AS replayed;
