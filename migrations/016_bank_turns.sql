-- 016: queued work is claimed bank by bank in turn, not oldest first across all banks.
-- Why: the worker took the oldest due operation of any bank, so a bank that queued 1,500 async
-- retains (or a long run of LLM fact extractions) put every other bank's work behind all of
-- them: another bank's async retain took 5.3 s instead of 0.15 (bench/README.md, "Queued work:
-- bank by bank in turn"). `bank_turns` holds, for each bank with work queued, when it is next
-- due for a turn: work becoming queued (queued anew, or back for a retry, a rate limit's wait or
-- a clean shutdown: a trigger, so that no way of queuing can forget it) sets it to now unless
-- the bank already has an earlier turn, a claim sets the turns of the banks it served to now
-- (to the back), and a bank found with nothing queued leaves until it queues again. The claim reads the first turns in order,
-- through their index, and each bank's oldest due work through operations_queued_bank: a few
-- index probes, whatever the backlog (sorting every due row, as before, took ~11-21 ms with
-- 100,000 queued). operations_queued_age finds the oldest due work of all, which competes as if
-- its turn came a minute after it was queued, so work whose bank lost its turn (found idle just
-- as it queued more) or sits past the first turns is never stranded.
CREATE TABLE bank_turns (
    bank_id text PRIMARY KEY REFERENCES banks(id) ON DELETE CASCADE,
    turn_at timestamptz NOT NULL
);
CREATE INDEX bank_turns_at ON bank_turns (turn_at);
CREATE INDEX operations_queued_bank ON operations (bank_id, created_at) WHERE status = 'queued';
CREATE INDEX operations_queued_age ON operations (created_at) WHERE status = 'queued';
INSERT INTO bank_turns (bank_id, turn_at)
SELECT bank_id, min(created_at) FROM operations WHERE status = 'queued' AND bank_id IS NOT NULL GROUP BY bank_id;

CREATE FUNCTION operations_bank_turn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- a bank with a turn already keeps it (not rewritten: a backlog queued one by one would
    -- leave as many dead versions of the row)
    INSERT INTO bank_turns (bank_id, turn_at) VALUES (NEW.bank_id, now())
    ON CONFLICT (bank_id) DO UPDATE SET turn_at = excluded.turn_at WHERE excluded.turn_at < bank_turns.turn_at;
    RETURN NULL;
END
$$;
CREATE TRIGGER operations_queued_turn AFTER INSERT ON operations
    FOR EACH ROW WHEN (NEW.status = 'queued' AND NEW.bank_id IS NOT NULL) EXECUTE FUNCTION operations_bank_turn();
CREATE TRIGGER operations_requeued_turn AFTER UPDATE OF status ON operations
    FOR EACH ROW WHEN (NEW.status = 'queued' AND OLD.status <> 'queued' AND NEW.bank_id IS NOT NULL)
    EXECUTE FUNCTION operations_bank_turn();
