//! Namespaces: create, delete and list them (master procedures, waited for like table ones).

use bytes::Bytes;

use super::Admin;
use crate::error::{Error, Result};

impl Admin {
    /// Creates namespace `name` and waits for the master's procedure. An existing namespace
    /// fails with [`ErrorKind::DoNotRetry`](crate::ErrorKind::DoNotRetry)
    /// (`NamespaceExistException`).
    pub async fn create_namespace(&self, name: &str) -> Result<()> {
        check_namespace_name(name)?;
        let req = hbase_proto::CreateNamespaceRequest {
            namespace_descriptor: hbase_proto::NamespaceDescriptor {
                name: Bytes::copy_from_slice(name.as_bytes()),
                configuration: Vec::new(),
            },
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::CreateNamespaceResponse =
            self.master_call("CreateNamespace", &req).await?;
        self.wait_procedure(resp.proc_id).await
    }

    /// Deletes namespace `name`, which must hold no tables, and waits for the master's
    /// procedure. A missing namespace is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound);
    /// one that still holds tables fails with
    /// [`ErrorKind::DoNotRetry`](crate::ErrorKind::DoNotRetry).
    pub async fn delete_namespace(&self, name: &str) -> Result<()> {
        check_namespace_name(name)?;
        let req = hbase_proto::DeleteNamespaceRequest {
            namespace_name: name.to_string(),
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::DeleteNamespaceResponse =
            self.master_call("DeleteNamespace", &req).await?;
        self.wait_procedure(resp.proc_id).await
    }

    /// The namespaces of the cluster (`default` and `hbase` included), in name order.
    pub async fn list_namespaces(&self) -> Result<Vec<String>> {
        let resp: hbase_proto::ListNamespacesResponse = self
            .master_call("ListNamespaces", &hbase_proto::ListNamespacesRequest {})
            .await?;
        let mut names = resp.namespace_name;
        names.sort();
        Ok(names)
    }
}

/// HBase's rule for namespace names: letters, digits and `_`, not empty.
fn check_namespace_name(name: &str) -> Result<()> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(Error::InvalidInput(format!(
            "invalid namespace name {name:?}: use letters, digits and _"
        )));
    }
    Ok(())
}
