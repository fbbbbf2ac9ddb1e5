-- The application's own tables, which the reminders follow (H2, created at each start).

-- A workflow step waiting for its assignee: what the seed asked its workflow engine
-- (queryPiDetail) before reminding.
CREATE TABLE workflow_steps (
    task_id      VARCHAR(64)  NOT NULL,
    instance     VARCHAR(64)  NOT NULL,
    title        VARCHAR(200) NOT NULL,
    assignee     VARCHAR(100) NOT NULL,
    manager      VARCHAR(100) NOT NULL,
    status       VARCHAR(16)  NOT NULL,  -- PENDING, DONE
    reminders    INT          NOT NULL DEFAULT 0,
    manager_told BOOLEAN      NOT NULL DEFAULT FALSE,
    PRIMARY KEY (task_id, instance)
);

CREATE TABLE orders (
    id       BIGINT       PRIMARY KEY,
    customer VARCHAR(100) NOT NULL,
    status   VARCHAR(16)  NOT NULL       -- UNPAID, PAID, CANCELLED
);
