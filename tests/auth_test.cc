// Unit tests of the CURVE pieces (src_calvin/auth/, common/curve.h): key
// files, and the ZAP handler admitting, refusing and naming keys.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>
#include <string>

#include "auth/keys.h"
#include "auth/zap_handler.h"
#include "common/curve.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::TempDir;

TEST(AuthKeysTest, KeygenWritesAPrivateSecretThatIsNeverOverwritten) {
  TempDir dir;
  std::string error;
  const CurveKeyPair keys = GenerateKeyPair(&error);
  ASSERT_FALSE(keys.empty()) << error;
  const std::string prefix = dir.path() + "/k";
  ASSERT_EQ(WriteKeyPair(prefix, keys), "");
  struct stat info {};
  ASSERT_EQ(stat((prefix + ".key").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  CurveKeyPair read;
  ASSERT_EQ(ReadSecretKeyFile(prefix + ".key", &read), "");
  EXPECT_EQ(read.secret_key, keys.secret_key);
  EXPECT_EQ(read.public_key, keys.public_key);  // derived from the secret
  std::string pub;
  ASSERT_EQ(ReadPublicKeyFile(prefix + ".pub", &pub), "");
  EXPECT_EQ(pub, keys.public_key);
  const CurveKeyPair other = GenerateKeyPair(&error);
  EXPECT_NE(WriteKeyPair(prefix, other).find("never overwritten"), std::string::npos);
  ASSERT_EQ(ReadSecretKeyFile(prefix + ".key", &read), "");
  EXPECT_EQ(read.secret_key, keys.secret_key);
  EXPECT_NE(ReadPublicKeyFile(dir.path() + "/none.pub", &pub).find("paxflow-cli keygen"),
            std::string::npos);
}

// A CURVE router in `domain` and dealers with the given keys, each saying
// its name once; returns the names heard (within `timeout_ms`) with the
// User-Id each came with.
std::set<std::string> Heard(zmq::context_t* context, const CurveKeyPair& server,
                            const std::string& domain,
                            const std::vector<std::pair<std::string, CurveKeyPair>>& clients,
                            int timeout_ms) {
  zmq::socket_t router(*context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  MakeCurveServer(&router, server, domain);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  std::vector<std::unique_ptr<zmq::socket_t>> dealers;
  for (const auto& [name, keys] : clients) {
    dealers.push_back(std::make_unique<zmq::socket_t>(*context, zmq::socket_type::dealer));
    dealers.back()->set(zmq::sockopt::linger, 0);
    MakeCurveClient(dealers.back().get(), keys, server.public_key);
    dealers.back()->connect(endpoint);
    dealers.back()->send(zmq::buffer(name), zmq::send_flags::dontwait);
  }
  std::set<std::string> heard;
  zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
  while (heard.size() < clients.size() && zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) > 0) {
    zmq::message_t identity, body;
    if (!router.recv(identity) || !router.recv(body)) break;
    const char* user = zmq_msg_gets(body.handle(), "User-Id");
    heard.insert(body.to_string() + "=" + (user ? user : "?"));
  }
  return heard;
}

TEST(ZapHandlerTest, AdmitsListedKeysNamesThemAndCountsTheRefused) {
  std::string error;
  const CurveKeyPair server = GenerateKeyPair(&error), op = GenerateKeyPair(&error),
                     app = GenerateKeyPair(&error), stranger = GenerateKeyPair(&error),
                     node = GenerateKeyPair(&error);
  zmq::context_t context(1);
  ZapPolicy policy;
  policy.clients[op.public_key] = true;
  policy.clients[app.public_key] = false;
  policy.nodes[node.public_key] = 4;
  ZapHandler zap(&context, policy);
  ASSERT_EQ(zap.Start(), "");
  EXPECT_EQ(Heard(&context, server, kClientDomain,
                  {{"op", op}, {"app", app}, {"stranger", stranger}, {"node", node}}, 1000),
            (std::set<std::string>{"op=operator:" + op.public_key, "app=client:" + app.public_key}));
  EXPECT_GE(zap.refused_clients(), 2u);
  EXPECT_EQ(Heard(&context, server, kPeerDomain, {{"node", node}, {"app", app}}, 1000),
            (std::set<std::string>{"node=node:4"}));
  EXPECT_GE(zap.refused_peers(), 1u);
  zap.Stop();
}

TEST(ZapHandlerTest, WithoutAHandlerNobodyIsAdmitted) {
  std::string error;
  const CurveKeyPair server = GenerateKeyPair(&error), client = GenerateKeyPair(&error);
  zmq::context_t context(1);  // no ZAP handler in it
  EXPECT_TRUE(Heard(&context, server, kClientDomain, {{"client", client}}, 500).empty());
}

TEST(ZapHandlerTest, AnyClientAdmitsUnknownKeysButNotAsOperators) {
  std::string error;
  const CurveKeyPair server = GenerateKeyPair(&error), client = GenerateKeyPair(&error);
  zmq::context_t context(1);
  ZapPolicy policy;
  policy.any_client = true;
  ZapHandler zap(&context, policy);
  ASSERT_EQ(zap.Start(), "");
  EXPECT_EQ(Heard(&context, server, kClientDomain, {{"c", client}}, 1000),
            (std::set<std::string>{"c=client:" + client.public_key}));
  EXPECT_EQ(Heard(&context, server, kPeerDomain, {{"c", client}}, 500), std::set<std::string>{});
}

}  // namespace
}  // namespace paxflow
