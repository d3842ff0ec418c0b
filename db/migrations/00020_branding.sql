-- Branded, readable e-mail.
--
-- An e-mail template's body is HTML, as every body written so far is, or
-- Markdown (a small, safe subset) that Herald turns into HTML. Every
-- existing template and kept version is HTML and renders exactly as
-- before; the column is per version, so history shows each body as it
-- was written.
--
-- A tenant's branding (at most one row per tenant) wraps every e-mail it
-- sends in one layout: a logo (an https URL shown with the tenant's name
-- as its text), a brand colour, a footer line and the sender's display
-- name. The application checks the values (contrast, URL scheme, lengths,
-- no line breaks); the checks here bound what may be stored at all.

-- +goose Up
ALTER TABLE templates ADD COLUMN body_format text NOT NULL DEFAULT 'html'
    CHECK (body_format IN ('html', 'markdown'));
ALTER TABLE template_versions ADD COLUMN body_format text NOT NULL DEFAULT 'html'
    CHECK (body_format IN ('html', 'markdown'));

CREATE TABLE tenant_branding (
    tenant_id    uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    logo_url     text NOT NULL DEFAULT '' CHECK (length(logo_url) <= 500),
    brand_color  text NOT NULL DEFAULT '' CHECK (brand_color = '' OR brand_color ~ '^#[0-9a-f]{6}$'),
    footer_text  text NOT NULL DEFAULT '' CHECK (length(footer_text) <= 500),
    sender_name  text NOT NULL DEFAULT '' CHECK (length(sender_name) <= 100 AND sender_name !~ '[\r\n]'),
    updated_by   uuid,
    updated_at   timestamptz NOT NULL
);
ALTER TABLE tenant_branding ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_branding FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON tenant_branding USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE tenant_branding;
ALTER TABLE template_versions DROP COLUMN body_format;
ALTER TABLE templates DROP COLUMN body_format;
