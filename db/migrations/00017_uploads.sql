-- Passenger lists by upload: a CSV whose rows become events.
--
-- An upload is validated whole before anything is stored: when it is
-- stored, every row passed intake's validation and the whole file fitted
-- the tenant's limits and quotas. Each row keeps the notification request
-- it stands for (request) until the upload is done; a batch job turns
-- rows into events under the event id upload:<upload id>:<row>, in row
-- order, and moves the cursor in the same transaction, so a crash between
-- batches resumes at the cursor and a crash inside one rolls the batch
-- back (the event ids would refuse doubles anyway). A row's event is
-- recorded on it (event_id), which is how progress counts its messages;
-- a row intake refused when its turn came keeps the refusal (error_*),
-- which is the upload's error file. Retention deletes finished uploads
-- with their rows (ON DELETE CASCADE).

-- +goose Up
CREATE TABLE uploads (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    trigger_event text NOT NULL CHECK (length(trigger_event) BETWEEN 1 AND 100),
    -- The column each recipient field or variable was read from.
    mapping       jsonb NOT NULL,
    filename      text CHECK (length(filename) <= 255),
    status        text NOT NULL CHECK (status IN ('READY', 'RUNNING', 'DONE')),
    total_rows    integer NOT NULL CHECK (total_rows BETWEEN 1 AND 100000),
    -- Rows handled so far, in row order: the next batch starts after it.
    cursor_row    integer NOT NULL DEFAULT 0 CHECK (cursor_row BETWEEN 0 AND total_rows),
    stored_rows   integer NOT NULL DEFAULT 0 CHECK (stored_rows >= 0),
    refused_rows  integer NOT NULL DEFAULT 0 CHECK (refused_rows >= 0),
    send_at       timestamptz,
    trip_id       text CHECK (length(trip_id) BETWEEN 1 AND 200),
    api_key_id    uuid,
    created_by    uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL,
    started_at    timestamptz,
    finished_at   timestamptz,
    CHECK (stored_rows + refused_rows = cursor_row),
    CHECK ((status = 'READY') = (started_at IS NULL)),
    CHECK ((status = 'DONE') = (finished_at IS NOT NULL))
);
CREATE INDEX uploads_tenant_created_idx ON uploads (tenant_id, created_at DESC, id DESC);
-- Retention finds finished uploads by their end.
CREATE INDEX uploads_finished_idx ON uploads (tenant_id, finished_at) WHERE status = 'DONE';
ALTER TABLE uploads ENABLE ROW LEVEL SECURITY;
ALTER TABLE uploads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON uploads USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE upload_rows (
    tenant_id     uuid NOT NULL,
    upload_id     uuid NOT NULL,
    -- The row's number in the file: the header is row 0.
    row_number    integer NOT NULL CHECK (row_number BETWEEN 1 AND 100000),
    -- The notification request the row stands for, until it is handled.
    request       jsonb,
    event_id      uuid,
    error_code    text CHECK (length(error_code) <= 100),
    error_field   text CHECK (length(error_field) <= 300),
    error_message text CHECK (length(error_message) <= 2000),
    PRIMARY KEY (tenant_id, upload_id, row_number),
    FOREIGN KEY (upload_id) REFERENCES uploads (id) ON DELETE CASCADE
);
CREATE INDEX upload_rows_upload_idx ON upload_rows (upload_id);
ALTER TABLE upload_rows ENABLE ROW LEVEL SECURITY;
ALTER TABLE upload_rows FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON upload_rows USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE upload_rows;
DROP TABLE uploads;
