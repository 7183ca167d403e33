CREATE POLICY notion_route ON notion_workspaces FOR SELECT
    USING (workspace_id = current_setting('app.notion_workspace', true));
