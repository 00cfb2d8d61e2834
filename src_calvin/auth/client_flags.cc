// The client tools' key flags (paxflow-cli, paxflow-load, paxflow-bench,
// paxflow-cluster): linked only into binaries that call ApplyClientKeyFlags.
#include <gflags/gflags.h>

#include "auth/client_keys.h"

DEFINE_string(client_key, "",
              "CURVE: this client's secret key file (PREFIX.key from paxflow-cli keygen). "
              "Default: the config's auth.client_secret_key_file when its auth.curve is on; "
              "else none (plain connections)");
DEFINE_string(server_key, "",
              "CURVE: the node's public key (Z85 text or a PREFIX.pub file), for endpoints "
              "the config does not name (it names each node's own). Needs --client_key");

namespace paxflow {

std::string ApplyClientKeyFlags(const ClusterConfig* config) {
  return UseClientKeys(config, FLAGS_client_key, FLAGS_server_key);
}

}  // namespace paxflow
