-- 019: files the server keeps for a bank and hands back by key: the transfer archive an export of
-- documents writes (Hindsight's document-transfer export, downloaded from
-- /v1/default/files/download/{key}), and what an import or a file retain reads, staged until its
-- operation runs. In parts of a few MiB, so that no statement carries a whole archive; a file goes
-- with its bank and with the operation that made it or reads it. Keys are unique within a bank.
CREATE TABLE bank_files (
    bank_id      text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    key          text NOT NULL,
    part         integer NOT NULL CHECK (part >= 0),
    operation_id uuid REFERENCES operations(id) ON DELETE CASCADE,
    media_type   text NOT NULL,
    name         text NOT NULL,
    content      bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, key, part)
);
CREATE INDEX bank_files_operation ON bank_files (operation_id) WHERE operation_id IS NOT NULL;
