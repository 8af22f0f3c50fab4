//! The store interface's key-value calls on a real Redis (the `redis` crate's synchronous client): `SET` with
//! `NX` and `PX` in one command, `GET`, `DEL`, `PEXPIRE`. Redis keeps real time, so TTLs run out in real time.

use crate::handler::{SetMode, StoreError, StoreResult};

pub struct RedisKv {
    connection: redis::Connection,
}

fn refused(error: redis::RedisError) -> StoreError {
    StoreError::Refused(format!("redis: {error}"))
}

impl RedisKv {
    /// Connect to `redis://HOST:PORT[/DB]`.
    pub fn connect(url: &str) -> StoreResult<RedisKv> {
        let client = redis::Client::open(url).map_err(refused)?;
        Ok(RedisKv {
            connection: client.get_connection().map_err(refused)?,
        })
    }

    pub fn set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool> {
        let mut command = redis::cmd("SET");
        command.arg(key).arg(value);
        if mode.if_absent {
            command.arg("NX");
        }
        if let Some(ttl_ms) = mode.ttl_ms {
            command.arg("PX").arg(ttl_ms);
        }
        // `OK` when written, nil when NX found the key.
        let written: Option<String> = command.query(&mut self.connection).map_err(refused)?;
        Ok(written.is_some())
    }

    pub fn get(&mut self, key: &str) -> StoreResult<Option<String>> {
        redis::cmd("GET")
            .arg(key)
            .query(&mut self.connection)
            .map_err(refused)
    }

    pub fn del(&mut self, key: &str) -> StoreResult<bool> {
        let removed: i64 = redis::cmd("DEL")
            .arg(key)
            .query(&mut self.connection)
            .map_err(refused)?;
        Ok(removed > 0)
    }

    pub fn expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool> {
        let set: i64 = redis::cmd("PEXPIRE")
            .arg(key)
            .arg(ttl_ms)
            .query(&mut self.connection)
            .map_err(refused)?;
        Ok(set == 1)
    }
}
