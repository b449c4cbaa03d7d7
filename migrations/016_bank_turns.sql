-- 016: queued work is claimed bank by bank in turn, not oldest first across all banks.
-- Why: the worker took the oldest due operation of any bank, so a bank that queued 1,500 async
-- retains (or a long run of LLM fact extractions) put every other bank's work behind all of
-- them: another bank's async retain took 5.3 s instead of 0.15 (bench/README.md, "Queued work:
-- bank by bank in turn"). `bank_turns` holds, for each bank with work queued, when it is next
-- due for a turn: work becoming queued (queued anew, or back for a retry, a rate limit's wait or
-- a clean shutdown: a trigger, so that no way of queuing can forget it) sets it to now unless
-- the bank already has an earlier turn, a claim sets the turns of the banks it served to now
-- (to the back), a bank found with nothing queued leaves until it queues again, and one whose
-- queued work is none of it due (retrying later) waits until it is. The claim reads the first
-- turns in order, through their index, and each bank's oldest due work through
-- operations_queued_bank (of each type the worker runs): a few index probes, whatever the
-- backlog (sorting every due row, as before, took ~11-21 ms with 100,000 queued).
-- operations_queued_age finds the oldest due work among the oldest queued, which competes as if
-- its turn came a minute after it was queued, so that work past the first turns is never
-- stranded. operations_queued_bank has the type after the bank: a worker that
-- does not run a type (no LLM configured) passes over a bank's backlog of it without reading it.
-- The trigger runs at commit (a deferred constraint trigger): a transaction that queues work and
-- goes on (an import uploading its files) would otherwise hold the bank's turn locked, and a
-- claim, which skips locked turns, could not send the bank to the back after serving it. It
-- always writes the turn, even unchanged, so that a claim that found the bank idle in its
-- snapshot sees a newer version (xmin) and keeps the turn instead of deleting it.
CREATE TABLE bank_turns (
    bank_id text PRIMARY KEY REFERENCES banks(id) ON DELETE CASCADE,
    turn_at timestamptz NOT NULL
);
CREATE INDEX bank_turns_at ON bank_turns (turn_at);
CREATE INDEX operations_queued_bank ON operations (bank_id, type, created_at) WHERE status = 'queued';
CREATE INDEX operations_queued_age ON operations (created_at) WHERE status = 'queued';
INSERT INTO bank_turns (bank_id, turn_at)
SELECT bank_id, min(created_at) FROM operations WHERE status = 'queued' AND bank_id IS NOT NULL GROUP BY bank_id;

CREATE FUNCTION operations_bank_turn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- the time of the commit, not of the transaction's start: a transaction kept open would
    -- otherwise give its bank a turn ahead of every bank served meanwhile. A bank with a turn
    -- already keeps the earlier of the two; the row is rewritten even when that is its own
    -- (a heap-only update, turn_at unchanged), once a transaction, not once an operation
    INSERT INTO bank_turns (bank_id, turn_at) VALUES (NEW.bank_id, clock_timestamp())
    ON CONFLICT (bank_id) DO UPDATE SET turn_at = least(bank_turns.turn_at, excluded.turn_at)
    WHERE bank_turns.xmin <> pg_current_xact_id()::xid;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER operations_queued_turn AFTER INSERT ON operations
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.status = 'queued' AND NEW.bank_id IS NOT NULL) EXECUTE FUNCTION operations_bank_turn();
CREATE CONSTRAINT TRIGGER operations_requeued_turn AFTER UPDATE OF status ON operations
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.status = 'queued' AND OLD.status <> 'queued' AND NEW.bank_id IS NOT NULL)
    EXECUTE FUNCTION operations_bank_turn();
