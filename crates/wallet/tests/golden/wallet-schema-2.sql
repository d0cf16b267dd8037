PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE wallet_schema_version (version BIGINT NOT NULL);
INSERT INTO wallet_schema_version VALUES(1);
INSERT INTO wallet_schema_version VALUES(2);
CREATE TABLE accounts (
        player TEXT NOT NULL,
        currency TEXT NOT NULL,
        balance BIGINT NOT NULL CHECK (balance >= 0),
        blocked BOOLEAN NOT NULL,
        max_bet BIGINT,
        pending BOOLEAN NOT NULL,
        pending_max_bet BIGINT,
        pending_at BIGINT,
        raise_asked_at BIGINT, version BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (player, currency)
    );
INSERT INTO accounts VALUES('alice','EUR',101900,0,NULL,0,NULL,NULL,NULL,5);
INSERT INTO accounts VALUES('bob','EUR',2500,0,NULL,0,NULL,NULL,NULL,3);
CREATE TABLE movements (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        tx TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        player TEXT NOT NULL,
        currency TEXT NOT NULL,
        amount BIGINT NOT NULL,
        table_id TEXT NOT NULL,
        round_id TEXT NOT NULL,
        bet TEXT NOT NULL,
        position_total BIGINT NOT NULL,
        credit_kind TEXT NOT NULL,
        refs TEXT NOT NULL,
        delta BIGINT NOT NULL,
        balance BIGINT,
        refusal TEXT,
        at_ms BIGINT NOT NULL
    , version BIGINT);
INSERT INTO movements VALUES(1,'cashier:deposit:1','deposit','alice','EUR',100000,'','','',0,'','',100000,100000,NULL,1796426788571,1);
INSERT INTO movements VALUES(2,'cashier:deposit:2','deposit','bob','EUR',5000,'','','',0,'','',5000,5000,NULL,1796426788572,1);
INSERT INTO movements VALUES(3,'debit:T01-S0001-H001:alice:1:banker','debit','alice','EUR',2000,'T01','T01-S0001-H001','banker',2000,'','',-2000,98000,NULL,1796426788573,2);
INSERT INTO movements VALUES(4,'debit:T01-S0001-H001:bob:1:player','debit','bob','EUR',1000,'T01','T01-S0001-H001','banker',1000,'','',-1000,4000,NULL,1796426788574,2);
INSERT INTO movements VALUES(5,'debit:T01-S0001-H001:bob:2:tie','debit','bob','EUR',9000,'T01','T01-S0001-H001','banker',9000,'','',0,NULL,'{"error":"insufficient_funds","detail":{"needed":9000,"available":4000}}',1796426788575,NULL);
INSERT INTO movements VALUES(6,'debit:T01-S0001-H001:alice:2:tie','debit','alice','EUR',500,'T01','T01-S0001-H001','banker',500,'','',-500,97500,NULL,1796426788576,3);
INSERT INTO movements VALUES(7,'cancel:debit:T01-S0001-H001:alice:2:tie','cancel','alice','EUR',500,'T01','T01-S0001-H001','',0,'','debit:T01-S0001-H001:alice:2:tie',500,98000,NULL,1796426788577,4);
INSERT INTO movements VALUES(8,'credit:T01-S0001-H001:alice:1','credit','alice','EUR',3900,'T01','T01-S0001-H001','banker',0,'settlement','debit:T01-S0001-H001:alice:1:banker',3900,101900,NULL,1796426788578,5);
INSERT INTO movements VALUES(9,'cashier:withdrawal:3','withdrawal','bob','EUR',1500,'','','',0,'','',-1500,2500,NULL,1796426788579,3);
CREATE TABLE postings (
        tx TEXT NOT NULL,
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        amount BIGINT NOT NULL,
        PRIMARY KEY (tx, account)
    );
INSERT INTO postings VALUES('cashier:deposit:1','player:alice','EUR',100000);
INSERT INTO postings VALUES('cashier:deposit:1','cashier','EUR',-100000);
INSERT INTO postings VALUES('cashier:deposit:2','player:bob','EUR',5000);
INSERT INTO postings VALUES('cashier:deposit:2','cashier','EUR',-5000);
INSERT INTO postings VALUES('debit:T01-S0001-H001:alice:1:banker','player:alice','EUR',-2000);
INSERT INTO postings VALUES('debit:T01-S0001-H001:alice:1:banker','bets:T01','EUR',2000);
INSERT INTO postings VALUES('debit:T01-S0001-H001:bob:1:player','player:bob','EUR',-1000);
INSERT INTO postings VALUES('debit:T01-S0001-H001:bob:1:player','bets:T01','EUR',1000);
INSERT INTO postings VALUES('debit:T01-S0001-H001:alice:2:tie','player:alice','EUR',-500);
INSERT INTO postings VALUES('debit:T01-S0001-H001:alice:2:tie','bets:T01','EUR',500);
INSERT INTO postings VALUES('cancel:debit:T01-S0001-H001:alice:2:tie','player:alice','EUR',500);
INSERT INTO postings VALUES('cancel:debit:T01-S0001-H001:alice:2:tie','bets:T01','EUR',-500);
INSERT INTO postings VALUES('credit:T01-S0001-H001:alice:1','player:alice','EUR',3900);
INSERT INTO postings VALUES('credit:T01-S0001-H001:alice:1','bets:T01','EUR',-3900);
INSERT INTO postings VALUES('cashier:withdrawal:3','player:bob','EUR',-1500);
INSERT INTO postings VALUES('cashier:withdrawal:3','cashier','EUR',1500);
CREATE TABLE debit_marks (
        debit TEXT PRIMARY KEY,
        state TEXT NOT NULL
    );
INSERT INTO debit_marks VALUES('debit:T01-S0001-H001:alice:2:tie','cancelled');
INSERT INTO debit_marks VALUES('debit:T01-S0001-H001:alice:1:banker','settled');
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('movements',9);
CREATE INDEX movements_player ON movements (player, currency, seq);
CREATE INDEX movements_at ON movements (at_ms, seq);
CREATE INDEX movements_table ON movements (table_id, at_ms, seq);
COMMIT;
