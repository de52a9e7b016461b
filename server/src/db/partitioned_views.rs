//! Which materialized views a cluster node maintains per partition of their stream
//! (`stream::partitioned_view`), and restarting them when the node's partitions change.

use super::{lock, Database, Engine};
use crate::catalog::partitioning::Partitioning;
use crate::catalog::{RelKind, RelationMeta};
use crate::stream::partitioned_view::Distribution;
use std::sync::Arc;

impl Engine {
    /// How materialized view `meta` of database `db` is maintained per partition on this
    /// node: in cluster mode, when it was created `WITH (distributed = true)` and reads one
    /// relation, a partitioned stream (whether its query is partition-local is decided when
    /// it is planned, `stream::partitioned_view`, unless its partial aggregates merge
    /// when read: `brook_planner::view_merge`); also a synopsis created `WITH (scope =
    /// 'global')` over one, whose partial rows are merged when read.
    pub(crate) fn distribution_of(&self, db: &str, meta: &RelationMeta) -> Option<Distribution> {
        let link = self.cluster.get()?;
        let asked = meta
            .options
            .get(crate::stream::partitioned_view::DISTRIBUTED_OPTION)
            .is_some_and(|v| v == "true");
        let merged = meta
            .options
            .contains_key(brook_planner::view_merge::MERGE_OPTION);
        let maintained_per_partition = match meta.kind {
            RelKind::MaterializedView => asked,
            RelKind::Synopsis => merged,
            _ => false,
        };
        if !maintained_per_partition {
            return None;
        }
        let [(schema, name)] = meta.depends_on.as_slice() else {
            return None;
        };
        let doc = self.catalog.read();
        let stream = doc
            .database(db)
            .ok()?
            .schemas
            .get(schema)?
            .relations
            .get(name)?;
        if stream.kind != RelKind::Stream {
            return None;
        }
        let partitioning = Partitioning::of(stream).ok()??;
        let key = partitioning
            .key
            .iter()
            .filter_map(|&i| stream.columns.get(i).map(|c| c.name.clone()))
            .collect();
        let owned = doc
            .cluster
            .as_ref()
            .and_then(|c| c.partition_owners.get(&stream.id))
            .map(|owners| {
                owners
                    .iter()
                    .filter(|(_, node)| **node == link.node)
                    .map(|(p, _)| *p)
                    .collect()
            })
            .unwrap_or_default();
        Some(Distribution {
            schema: schema.clone(),
            name: name.clone(),
            id: stream.id,
            partitioning,
            key,
            owned,
            merged,
        })
    }

    /// Rebuild the materialized views maintained per partition over stream `stream`,
    /// whose partitions' owners changed: each starts again over the partitions this node
    /// owns now (in the databases open here; one opened later starts so).
    pub fn rebuild_partitioned_views(&self, stream: u64) {
        let dbs: Vec<Arc<Database>> = lock(&self.databases).values().cloned().collect();
        let doc = self.catalog.read().clone();
        for db in dbs {
            let Ok(meta) = doc.database(&db.name) else {
                continue;
            };
            for (sname, s) in &meta.schemas {
                for (rname, rel) in &s.relations {
                    if self
                        .distribution_of(&db.name, rel)
                        .is_none_or(|d| d.id != stream)
                    {
                        continue;
                    }
                    // A view planned whole (its query is not partition-local) holds every
                    // partition already.
                    if self
                        .view_state(&db, sname, rname)
                        .is_ok_and(|state| state.planned_whole())
                    {
                        continue;
                    }
                    if let Err(e) = self.rebuild_view(&db, sname, rname) {
                        tracing::error!(database = %db.name, view = %format!("{sname}.{rname}"), error = %e, "could not restart a materialized view over the partitions this node owns");
                    }
                }
            }
        }
    }
}
