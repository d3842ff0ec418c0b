-- Row-level security reads the transaction's scope once per statement, not
-- once per row.
--
-- The policies compared each row with herald_tenant() and herald_platform().
-- Both are inlined into the row filter, so every row a statement reads
-- parsed the tenant setting into a uuid again: counting the 20,000 stale
-- messages of a tenant with 10M took 8.8 ms, 6 of them in the filter. As
-- sub-selects they become init plans, evaluated once per statement, and the
-- filter compares each row with a value: the same count takes 2.4 ms, and
-- the dashboard's 31-day roll-up at 10M messages 8.8 s instead of 10.9 s.
-- The price is the init plans' start-up in every statement that reads a
-- table with a policy: a single-row select took 5.1-5.6 us against 4.1 us
-- (server-side loop), about 1 us, or some 15 us of the 2.9 ms of Postgres
-- CPU a delivered message costs. The rows each scope sees are unchanged.
-- New policies follow this form (a test checks every policy of the schema).

-- +goose Up
ALTER POLICY tenant_scope ON api_keys USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON api_rejection_counters USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON api_rejections USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON audit_log USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON callback_deliveries USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON callback_endpoints USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON channel_accounts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON contact_changes USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON contacts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON conversations USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON delivery_deadlines USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON entity_supersessions USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON events USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON inbound_messages USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON message_count_marks USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON message_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON message_day_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON message_events USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON message_failure_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON message_latency_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON message_template_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON messages USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON meta_templates USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON quota_usage USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON template_versions USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON templates USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON trip_bookings USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON usage_counters USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON users USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON tenants USING (id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
ALTER POLICY tenant_scope ON webhook_receipts USING (
    tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform())
    OR (outcome = 'pending' AND EXISTS (
        SELECT FROM channel_accounts a WHERE a.id = ANY (via_accounts) AND a.tenant_id = (SELECT herald_tenant()))));
ALTER POLICY platform_only ON audit_anchors USING ((SELECT herald_platform()));
ALTER POLICY login_throttle_platform ON login_throttle USING ((SELECT herald_platform())) WITH CHECK ((SELECT herald_platform()));
ALTER POLICY login_failure_windows_platform ON login_failure_windows USING ((SELECT herald_platform())) WITH CHECK ((SELECT herald_platform()));

-- +goose Down
ALTER POLICY tenant_scope ON api_keys USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON api_rejection_counters USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON api_rejections USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON audit_log USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON callback_deliveries USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON callback_endpoints USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON channel_accounts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON contact_changes USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON contacts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON conversations USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON delivery_deadlines USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON entity_supersessions USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON events USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON inbound_messages USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON message_count_marks USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON message_counts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON message_day_counts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON message_events USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON message_failure_counts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON message_latency_counts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON message_template_counts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON messages USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON meta_templates USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON quota_usage USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON template_versions USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON templates USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON trip_bookings USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON usage_counters USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON users USING (tenant_id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON tenants USING (id = herald_tenant() OR herald_platform());
ALTER POLICY tenant_scope ON webhook_receipts USING (
    tenant_id = herald_tenant() OR herald_platform()
    OR (outcome = 'pending' AND EXISTS (
        SELECT FROM channel_accounts a WHERE a.id = ANY (via_accounts) AND a.tenant_id = herald_tenant())));
ALTER POLICY platform_only ON audit_anchors USING (herald_platform());
ALTER POLICY login_throttle_platform ON login_throttle USING (herald_platform()) WITH CHECK (herald_platform());
ALTER POLICY login_failure_windows_platform ON login_failure_windows USING (herald_platform()) WITH CHECK (herald_platform());
