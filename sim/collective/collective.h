// Collective algorithms as per-member step programs: written once, executed by every executor (the
// SimGrid flow and step fidelities in sim/execute, the MPI/CUDA/NCCL transports in real/).
//
// A collective runs in steps. In step s a member posts its receives and sends, waits for all of them, then
// reduces what it received and, for a parameter server, applies the update. `rank_step(member, s)` is the
// only description of the algorithm: a per-rank executor calls it for its own member, the step-level
// evaluator calls it for every member of one step of each run of identical steps (`runs()`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringsim::collective {

// Where a member's buffer lives.
enum class Space : std::uint8_t { Device, Host };
std::string_view to_string(Space s);

// One message: `bytes` of the buffer starting at `offset`, from member `src` to member `dst`. With
// src == dst and different spaces it is a local copy (device <-> host staging).
struct Transfer {
  int src = 0, dst = 0;
  Space src_space = Space::Device, dst_space = Space::Device;
  std::uint64_t offset = 0, bytes = 0;
  bool reduce = false;  // the receiver adds it into its buffer (otherwise it overwrites)
  bool operator==(const Transfer&) const = default;
};

// What one member does in one step.
struct RankStep {
  std::vector<Transfer> sends;     // src == this member
  std::vector<Transfer> recvs;     // dst == this member
  std::uint64_t update_bytes = 0;  // parameters this member updates after the step (parameter server)
  void clear() {
    sends.clear();
    recvs.clear();
    update_bytes = 0;
  }
};

// The phases collectives run in: staging copies, the ring's and halving-doubling's halves, the
// hierarchical allreduce's local and cross-node parts, the parameter servers' push and pull.
enum class Phase : std::uint8_t {
  CopyToHost,
  CopyToDevice,
  ReduceScatter,
  Allgather,
  Fold,
  Unfold,
  LocalReduceScatter,
  LocalGather,
  LocalScatter,
  LocalAllgather,
  CrossReduceScatter,
  CrossAllgather,
  CrossFold,
  CrossUnfold,
  LocalReduce,
  Push,
  Pull,
  LocalBroadcast,
  InSwitch,
  TreeUp,
  TreeUpDown,
  TreeDown,
};
// The name reports and traces show: "copy_to_host", "reduce_scatter", "cross_allgather", ...
std::string_view to_string(Phase p);

// Consecutive steps whose communication pattern is the same (same pairs and byte counts up to which chunk
// each pair carries): a step-level evaluator evaluates `first` and counts it `count` times.
struct StepRun {
  int first = 0, count = 0;
  Phase phase = Phase::ReduceScatter;
};

// How a library moves a collective's messages where its tuning picks a protocol per message (NCCL's LL,
// LL128, Simple): what the simulators charge for it. Real transports ignore it: their library picks.
struct Protocol {
  std::string_view name;    // empty: none picked (the library's plain figures)
  double call_s = 0;        // per call, instead of the library's collective_overhead
  double step_floor_s = 0;  // each message takes at least this long besides its bytes' time
  double bandwidth = 1;     // the share of the paths' effective bandwidth the protocol reaches
};

// Nodes whose members move alike: `local` members a node, node-major, then `extra` a node (each node's switch,
// say), node-major; in every step a member of any node of a class sends and receives what its twin in the
// class's first node does: among its node's members, the same transfers translated by the node, and with
// other nodes, the same sizes. A step-level evaluator can then take every class's first node whole and only
// the others' transfers between nodes.
struct NodeClasses {
  int local = 0, extra = 0;
  std::vector<int> of_node;  // each node's class, numbered by first appearance; empty: no classes known
  std::vector<int> first;    // each class's first node
  NodeClasses() = default;
  NodeClasses(int local_members, int extra_members, std::vector<int> classes);
  int nodes() const { return static_cast<int>(of_node.size()); }
  int count() const { return static_cast<int>(first.size()); }
  int members() const { return nodes() * (local + extra); }
  int node(int m) const { return m < nodes() * local ? m / local : (m - nodes() * local) / extra; }
  int member(int n, int i) const {  // node n's i-th member, i < local + extra
    return i < local ? n * local + i : nodes() * local + n * extra + i - local;
  }
  bool leads(int m) const { return first[of_node[node(m)]] == node(m); }  // in its class's first node
  int twin(int m) const {
    const int n = node(m), i = m < nodes() * local ? m % local : local + (m - nodes() * local) % extra;
    return member(first[of_node[n]], i);
  }
  void clear() { *this = {}; }
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string_view algorithm() const = 0;  // "ring_allreduce", ...
  virtual int members() const = 0;
  virtual int steps() const = 0;
  virtual void rank_step(int member, int step, RankStep& out) const = 0;
  virtual std::vector<StepRun> runs() const = 0;
  // Where member m keeps its buffer between steps (the space reductions run in).
  virtual Space home_space(int member) const = 0;
  // Nodes that move alike, for the step-level evaluator (NodeClasses); none known by default.
  virtual NodeClasses node_classes() const { return {}; }
  // Member m's sends in step s to members of other nodes (as `nodes` places them): rank_step's, filtered,
  // unless a collective finds them faster.
  virtual void remote_sends(int member, int step, const NodeClasses& nodes, std::vector<Transfer>& out) const;
  std::uint64_t bytes() const { return bytes_; }
  Protocol protocol;  // set by whoever picks one (execute/buffer_collective.h)

 protected:
  explicit Collective(std::uint64_t bytes) : bytes_(bytes) {}
  std::uint64_t bytes_;
};

// Splits `bytes` of `element_bytes`-sized elements into `parts` contiguous chunks differing by at most one
// element (the first `remainder` chunks get the extra element).
struct Chunking {
  Chunking(std::uint64_t bytes, int parts, int element_bytes);
  std::uint64_t offset(int chunk) const;
  std::uint64_t size(int chunk) const;
  std::uint64_t elements_base = 0, remainder = 0;
  int element_bytes = 4;
};

// Ring allreduce over `members` GPUs: reduce-scatter then allgather, 2(p-1) steps of ~S/p to the right
// neighbour (member + 1 mod p). With a host data path every member first copies its buffer to host memory
// and back at the end, and the ring runs between host buffers.
// `order` (optional) is the ring: position i is member order[i], its right neighbour order[i + 1]; empty
// means members in index order. NCCL likewise builds its rings along the fastest links.
std::unique_ptr<Collective> make_ring_allreduce(int members, std::uint64_t bytes, int element_bytes, Space data_space,
                                                const std::vector<int>& order = {});
// Channels, as NCCL runs several rings at once: the buffer splits into one contiguous share per ring
// (whole elements, differing by at most one), and ring c allreduces share c along orders[c] (an empty
// order: index order). Every step carries one transfer per channel per member, so rings that leave a
// node through different NICs use them all. Two channels may send between the same pair in one step;
// sends and receives are listed in channel order on both sides, so transports that match a pair's
// messages in posting order (MPI with one tag per step, NCCL point-to-point) pair them correctly.
std::unique_ptr<Collective> make_ring_allreduce(int members, std::uint64_t bytes, int element_bytes, Space data_space,
                                                const std::vector<std::vector<int>>& orders);

// The two halves of the ring on their own. After the reduce-scatter member m holds the reduced chunk
// ring_chunk_owned(m, p); the allgather expects each member to hold that chunk and gives everyone all.
// `bytes` is the whole buffer (nccl-tests' size), of which each member contributes or keeps ~1/p.
std::unique_ptr<Collective> make_ring_reduce_scatter(int members, std::uint64_t bytes, int element_bytes);
std::unique_ptr<Collective> make_ring_allgather(int members, std::uint64_t bytes, int element_bytes);
// With channels, as the allreduce: ring c moves its share of the buffer along orders[c] (in channel c a
// member holds chunk ring_chunk_owned(its position, p) of that share). A host data path stages what each
// half reads and writes: the reduce-scatter copies in the buffer and out its share, the allgather the reverse.
std::unique_ptr<Collective> make_ring_reduce_scatter(int members, std::uint64_t bytes, int element_bytes, Space space,
                                                     const std::vector<std::vector<int>>& orders);
std::unique_ptr<Collective> make_ring_allgather(int members, std::uint64_t bytes, int element_bytes, Space space,
                                                const std::vector<std::vector<int>>& orders);

// Bus bandwidth over algorithm bandwidth, as nccl-tests reports them: what each rank's link carries in a
// ring of `members` relative to the buffer, 2(n-1)/n for an allreduce, (n-1)/n for a reduce-scatter or an
// allgather (whose buffer is the whole); 1 for one member.
enum class BusOp : std::uint8_t { AllReduce, ReduceScatter, AllGather };
inline double bus_bandwidth_factor(BusOp op, int members) {
  if (members <= 1) return 1;
  return op == BusOp::AllReduce ? 2.0 * (members - 1) / members : static_cast<double>(members - 1) / members;
}
inline int ring_chunk_owned(int member, int members) { return (member + 1) % members; }
// The result schema's and ringsim-real's name of an op ("allreduce", "allgather", "reduce_scatter"), and the
// op a command line names: those, or nccl-tests' test names (all_reduce, all_gather); nullopt: none.
std::string_view op_name(BusOp op);
std::optional<BusOp> parse_op(std::string_view name);
inline const std::vector<std::string> kBenchOps = {"all_reduce", "all_gather", "reduce_scatter", "allreduce",
                                                   "allgather"};

// The message sizes of an nccl-tests sweep (-b MIN -e MAX -f FACTOR): MIN, MIN x FACTOR, ... up to MAX,
// each rounded down to whole elements (a 0 minimum is followed by one element).
std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, double factor,
                                       std::size_t element_bytes);

// Recursive halving and doubling (Rabenseifner's allreduce, as in Gloo and MPI libraries): with P the largest
// power of two <= members, the first 2(members - P) members fold pairwise into P, which reduce-scatter by
// recursive halving and allgather by recursive doubling (2 log2 P steps: a ring's 2(p-1) latencies
// become 2 log2 P, for the same bytes per member), then unfold. Host data path: staged as the ring.
std::unique_ptr<Collective> make_halving_doubling_allreduce(int members, std::uint64_t bytes, int element_bytes,
                                                            Space data_space);

// NVLS allreduce (NCCL's NVLink SHARP) on `gpus` GPUs of one NVSwitch, member `gpus` being the switch, which
// reduces and multicasts in hardware. Each GPU g owns shard g of every slice; `slices` slices stream
// through four stages one step apart: every GPU sends the slice to the switch (reduced there); the switch
// returns shard g, reduced, to GPU g; GPU g stores it to the switch; the switch multicasts it to every GPU.
// Per GPU and direction S (1 + 1/gpus) bytes cross its port, as NCCL's reduce-scatter by multimem loads and
// allgather by multimem stores move them.
std::unique_ptr<Collective> make_nvls_allreduce(int gpus, std::uint64_t bytes, int element_bytes, int slices);

// NCCL's NVLSTree allreduce (2.18 and later, across nodes whose NVSwitch reduces): NVLS inside each node,
// the double binary tree across. Members: `nodes` x `local` GPUs, node-major, then each node's switch. Slice
// k (of `slices`) is split in two halves, one per tree, each half in one shard per local GPU. At offset 0
// from step k every GPU sends the slice to its node's switch (reduced there); at 1 the switch returns GPU g
// shard g of both halves; GPU g of a node at height h of tree tau sends its half-tau shard up to GPU g of
// the parent node at 2 + h (reduced there); the root holds the sum at 2 + H (H its height) and a node at
// depth d at 2 + H + d, when it sends it down to its children's GPU g and stores it to its switch, which
// multicasts the half to every GPU of the node one step later. One node: NVLS (make_nvls_allreduce).
std::unique_ptr<Collective> make_nvls_tree_allreduce(int nodes, int local, std::uint64_t bytes, int element_bytes,
                                                     int slices);

// NCCL's tree allreduce (2.4 and later) over `nodes` x `local` members, node-major. Channel c runs one tree
// through every member: inside each node a chain along chains[c] (local indices; the first is the node's
// head), and across nodes the heads form binary tree c % 2 of NCCL's double binary tree (src/graph/trees.cc:
// tree 1 mirrors tree 0 for an even node count and shifts it by one for an odd, so a node that is a leaf of
// one is inside the other). Each channel's share of the buffer is pipelined in `chunks` chunks: a member
// reduces chunk j from its children and sends it to its parent at step j + its height; the root sends it
// back down, one hop a step. Steps: chunks + 2 H - 1, H the tallest channel's height. Host data path:
// staged as the ring.
std::unique_ptr<Collective> make_tree_allreduce(int nodes, int local, std::uint64_t bytes, int element_bytes,
                                                Space data_space, const std::vector<std::vector<int>>& chains,
                                                int chunks);
// The parent of member `rank` of NCCL's binary tree over `ranks` (rank 0 the root: -1); tree 1 of the
// double binary tree is double_binary_tree_parent(1, ...).
int binary_tree_parent(int rank, int ranks);
int double_binary_tree_parent(int tree, int rank, int ranks);
// NCCL's tree chunk (Simple protocol, src/enqueue.cc): its step of 512 KiB halved while each channel would
// get fewer than 8 chunks per level of the tree (down to 128 KiB), fewer than 4 (to 64 KiB), fewer than 1
// (to 32 KiB). Returns the chunks per channel: the share over that chunk, at least 1.
int tree_chunks(std::uint64_t bytes, int channels, int depth);

// How the local roots of a hierarchical allreduce reduce across nodes.
enum class CrossNode : std::uint8_t { Ring, HalvingDoubling };

// Hierarchical allreduce over `nodes` x `local` members (node-major): reduce within each node to its local
// member 0 (ring reduce-scatter, then a gather along the ring), allreduce among the local roots (a ring or
// halving-doubling), broadcast within each node (a scatter along the ring, then ring allgather).
// `local_order` (optional): the ring inside every node over local indices, starting with local index 0
// (the node's root).
std::unique_ptr<Collective> make_hierarchical_allreduce(int nodes, int local, std::uint64_t bytes, int element_bytes,
                                                        Space data_space, const std::vector<int>& local_order = {},
                                                        CrossNode cross = CrossNode::Ring);

// Synchronous parameter-server exchange: members [0, workers) are workers, [workers, workers + servers)
// are servers. `shard_bytes[j]` is what lives on server j. Step 0: every worker pushes each shard to its
// server, which reduces them; servers then apply the update. Step 1: every worker pulls every shard.
std::unique_ptr<Collective> make_parameter_server_exchange(int workers, const std::vector<std::uint64_t>& shard_bytes,
                                                           Space worker_space);

// Parameter servers on the workers themselves (TensorFlow's local_parameter_device=gpu): worker j is
// server j and keeps shard j, `shard_bytes.size()` workers. Step 0: every worker pushes each shard to the
// worker that serves it, which reduces the others' and updates; step 1: every worker pulls every shard
// it does not serve.
std::unique_ptr<Collective> make_parameter_server_on_workers(const std::vector<std::uint64_t>& shard_bytes,
                                                             Space worker_space);

// TensorFlow's distributed_replicated: members [0, nodes * local) are workers (node-major), then the
// servers. Step 0: within every node each GPU sends the buffer to local GPU `aggregator`, which sums;
// step 1: the aggregators push each shard to its server, which reduces and updates; step 2: local
// member 0 of every node pulls every shard into its host memory; step 3: it copies the buffer into
// every GPU of its node (its own by a local copy).
std::unique_ptr<Collective> make_node_aggregated_parameter_server(int nodes, int local,
                                                                  const std::vector<std::uint64_t>& shard_bytes,
                                                                  int aggregator, Space worker_space);

// Groups of members running one collective each, at once: member groups[g][i] is `base`'s member i in group g,
// its spans at offsets[g] of the buffer (all groups the base's size; members in no group idle). Named `name`.
std::unique_ptr<Collective> make_grouped(std::shared_ptr<const Collective> base, std::vector<std::vector<int>> groups,
                                         std::vector<std::uint64_t> offsets, std::string name);
// The same where each group g runs a base of its own, bases[g] (all with the same steps), over a span in pieces:
// its buffer is pieces[g] laid end to end (their bytes sum to its base's), so a transfer over a piece's end is
// sent as one transfer a piece, alike on both sides.
struct Piece {
  std::uint64_t offset = 0, bytes = 0;
};
std::unique_ptr<Collective> make_grouped(std::vector<std::shared_ptr<const Collective>> bases,
                                         std::vector<std::vector<int>> groups, std::vector<std::vector<Piece>> pieces,
                                         std::string name);
// `first`'s steps, then `second`'s, over the same members (one collective as its callers see it).
std::unique_ptr<Collective> make_sequence(std::unique_ptr<Collective> first, std::unique_ptr<Collective> second,
                                          std::string name);

// How tensors are spread over servers: TensorFlow's greedy placement (each tensor, in creation order, to
// the server with the fewest bytes so far; ties: lowest index), or round robin by tensor index (the GPU
// that aggregates variable i in TensorFlow's replicated mode without NCCL). Returns each tensor's server.
enum class ServerAssignment : std::uint8_t { Greedy, RoundRobin };
std::vector<int> assign_to_servers(const std::vector<std::uint64_t>& tensor_bytes, int servers,
                                   ServerAssignment how = ServerAssignment::Greedy);

}  // namespace ringsim::collective
