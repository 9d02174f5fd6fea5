// A user's files are safe (issue 50): no command writes over one of its inputs or over another of its
// outputs; every reader refuses what is not a regular file or is too large, at once and in little memory;
// a failed write says why, exits 2 and leaves nothing behind.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;
extern char** environ;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct Outcome {
  int status = -1;
  std::string err;         // standard error
  double seconds = 0;      // wall time
  long max_rss_kb = 0;     // the child's peak resident memory
  bool timed_out = false;  // killed after the time limit: a reader that never returns
};

// Runs `ringsim ARGS` (arguments split at spaces; {x} placeholders already replaced) with standard output
// discarded, killed after `limit_s`.
Outcome run_ringsim(const std::string& args, const fs::path& work, double limit_s = 60) {
  std::vector<std::string> argv = {RINGSIM_TEST_BINARY};
  for (std::size_t at = 0; at < args.size();) {
    const std::size_t space = args.find(' ', at);
    const std::string word = args.substr(at, space == std::string::npos ? std::string::npos : space - at);
    if (!word.empty()) argv.push_back(word);
    if (space == std::string::npos) break;
    at = space + 1;
  }
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  const std::string err_file = (work / "stderr.txt").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(posix_spawn(&pid, c_argv[0], &fa, nullptr, c_argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  Outcome o;
  int status = 0;
  struct rusage ru {};
  for (;;) {
    const pid_t r = wait4(pid, &status, WNOHANG, &ru);
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r == pid) break;
    if (o.seconds > limit_s && !o.timed_out) {
      o.timed_out = true;
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  o.max_rss_kb = ru.ru_maxrss;
  o.err = ringsim::test::without_asan_notes(ringsim::test::slurp(err_file));
  return o;
}

std::string replaced(std::string s, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values)
    for (auto pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + value.size()))
      s.replace(pos, key.size(), value);
  return s;
}

std::size_t content_hash(const fs::path& f) { return std::hash<std::string>{}(ringsim::test::slurp(f.string())); }

// A folder with one valid file of every kind a command reads, and a copy of the catalog.
struct Inputs {
  fs::path dir;
  std::map<std::string, std::string> files;  // {S} -> path

  Inputs() : dir(fs::temp_directory_path() / ("ringsim_file_safety_" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy(RINGSIM_TEST_CATALOG, dir / "catalog", fs::copy_options::recursive);
    put("{S}", "scenario.yaml", ringsim::test::slurp(std::string(RINGSIM_TEST_BAD_INPUTS) + "/valid.yaml"));
    put("{R}", "runs.csv", "cluster.nodes,images_per_sec\n1,600\n2,1150\n");
    put("{N}", "nccl.txt",
        ringsim::test::slurp(std::string(RINGSIM_TEST_DATA) + "/../../fuzz/corpus/measurements/all_reduce_perf.txt"));
    put("{M}", "measured.json", "{\"schema\": \"ringsim.result/1\"}\n");
    put("{T}", "timeline.json",
        ringsim::test::slurp(std::string(RINGSIM_TEST_DATA) + "/../../fuzz/corpus/measurements/timeline.json"));
    put("{P}", "published.yaml", "cases: []\n");
    put("{PR}", "prices.yaml", ringsim::test::slurp(std::string(RINGSIM_TEST_DATA) + "/plan_prices.yaml"));
    files["{C}"] = (dir / "catalog").string();
    files["{CF}"] = (dir / "catalog" / "gpus.yaml").string();
  }
  ~Inputs() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void put(const std::string& key, const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    files[key] = (dir / name).string();
  }
};

// A command, the inputs it reads ({S} ...) and the options that name its outputs.
struct Command {
  std::string args;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

const std::vector<Command>& commands() {
  static const std::vector<Command> c = {
      {"predict {S} --no-band", {"{S}", "{CF}"}, {"--json", "--trace", "--links"}},
      {"bench {S} -e 1M", {"{S}", "{CF}"}, {"--json"}},
      {"job {S} --launcher mpirun", {"{S}", "{CF}"}, {"-o"}},
      {"validate {S} --measured {M}", {"{S}", "{M}", "{CF}"}, {"--json", "--plot"}},
      {"validate {S} --horovod-timeline {T}", {"{S}", "{T}"}, {"--json"}},
      {"validate --published {P} --no-band", {"{P}", "{CF}"}, {"--json"}},
      {"calibrate {S} --runs {R}", {"{S}", "{R}", "{CF}"}, {"-o"}},
      {"calibrate {S} --nccl-tests {N}", {"{S}", "{N}"}, {"-o", "--plot"}},
      {"sweep {S} --sweep cluster.nodes=1,2", {"{S}", "{CF}"}, {"--csv", "--json", "--plot"}},
      {"plan {S} --deadline 8h --prices {PR}", {"{S}", "{PR}", "{CF}"}, {"--csv", "--json", "--plot"}},
      {"topo NC24rs_v3", {"{CF}"}, {"--dot", "--platform-xml"}},
  };
  return c;
}

// Every input's hash, to show that a refused command left them as they were.
std::map<std::string, std::size_t> hashes(const Inputs& in) {
  std::map<std::string, std::size_t> h;
  for (const auto& [key, path] : in.files)
    if (fs::is_regular_file(path)) h[key] = content_hash(path);
  return h;
}

}  // namespace

TEST_CASE("file safety: no output may be an input or another output", "[file_safety][cli]") {
  Inputs in;
  const auto before = hashes(in);
  const std::string catalog = "--catalog " + in.files.at("{C}") + " ";
  for (const Command& c : commands()) {
    const std::string base = replaced(c.args, in.files);
    for (const std::string& out : c.outputs) {
      // The output named as each input.
      for (const std::string& input : c.inputs) {
        DYNAMIC_SECTION(c.args << " " << out << " " << input) {
          const Outcome o = run_ringsim(catalog + base + " " + out + " " + in.files.at(input), in.dir);
          CHECK(o.status == 2);
          CHECK_THAT(o.err, Catch::Contains("would overwrite") && Catch::Contains(in.files.at(input)));
          CHECK(hashes(in) == before);
        }
      }
      // The output named as another output of the same command.
      for (const std::string& other : c.outputs) {
        if (other == out || other == "--plot" || out == "--plot") continue;
        DYNAMIC_SECTION(c.args << " " << out << " = " << other) {
          const std::string same = (in.dir / "same.out").string();
          const Outcome o = run_ringsim(catalog + base + " " + out + " " + same + " " + other + " " + same, in.dir);
          CHECK(o.status == 2);
          CHECK_THAT(o.err, Catch::Contains("name the same file"));
          CHECK_FALSE(fs::exists(same));
        }
      }
      // --plot IMAGE writes STEM.dat and STEM.gp beside the image: a user's file of that name is an output too.
      if (out != "--plot" && std::find(c.outputs.begin(), c.outputs.end(), "--plot") != c.outputs.end()) {
        DYNAMIC_SECTION(c.args << " --plot chart.png " << out << " chart.dat") {
          const std::string dat = (in.dir / "chart.dat").string();
          std::ofstream(dat) << "a user's data\n";
          const Outcome o = run_ringsim(
              catalog + base + " --plot " + (in.dir / "chart.png").string() + " " + out + " " + dat, in.dir);
          CHECK(o.status == 2);
          CHECK_THAT(o.err, Catch::Contains("name the same file"));
          CHECK(ringsim::test::slurp(dat) == "a user's data\n");
          fs::remove(dat);
        }
      }
    }
  }
  SECTION("through a symbolic link and a path with '..'") {
    const fs::path link = in.dir / "link.json";
    fs::create_symlink(in.files.at("{S}"), link);
    const std::string scenario = in.files.at("{S}");
    for (const std::string& target : {link.string(), (in.dir / "catalog" / ".." / "scenario.yaml").string()}) {
      const Outcome o = run_ringsim(catalog + "predict " + scenario + " --no-band --json " + target, in.dir);
      CHECK(o.status == 2);
      CHECK_THAT(o.err, Catch::Contains("would overwrite the scenario"));
    }
    CHECK(hashes(in) == before);
  }
  SECTION("sweep --resume reads and rewrites its own --csv") {
    const std::string csv = (in.dir / "sweep.csv").string();
    const std::string args = catalog + "sweep " + in.files.at("{S}") + " --sweep cluster.nodes=1,2 -j 1 --csv " + csv;
    REQUIRE(run_ringsim(args, in.dir).status == 0);
    const Outcome o = run_ringsim(args + " --resume", in.dir);
    CHECK(o.status == 0);
    CHECK(fs::file_size(csv) > 0);
  }
}

namespace {

// A reader, as a command that reads the file at {X}.
struct Reader {
  std::string name;
  std::string args;
};

const std::vector<Reader>& readers() {
  static const std::vector<Reader> r = {
      {"scenario", "check {X}"},
      {"calibration overlay", "predict {S} --no-band --calibration {X}"},
      {"prices", "plan {S} --deadline 8h --prices {X}"},
      {"runs CSV", "calibrate {S} --runs {X}"},
      {"nccl-tests log", "calibrate {S} --nccl-tests {X}"},
      {"calibration data", "calibrate {S} --data {X}"},
      {"measured result", "validate {S} --measured {X}"},
      {"Horovod timeline", "validate {S} --horovod-timeline {X}"},
      {"published cases", "validate --published {X} --no-band"},
      {"catalog", "--catalog {XC} check {S}"},
  };
  return r;
}

// A hostile stand-in for a file: made at `path`, or the path to use instead.
struct Hostile {
  std::string name;
  std::function<std::string(const fs::path&)> make;
};

const std::vector<Hostile>& hostile_files() {
  static const std::vector<Hostile> h = {
      {"/dev/zero", [](const fs::path&) { return std::string("/dev/zero"); }},
      {"/dev/urandom", [](const fs::path&) { return std::string("/dev/urandom"); }},
      {"a FIFO",
       [](const fs::path& p) {
         REQUIRE(mkfifo(p.c_str(), 0644) == 0);
         return p.string();
       }},
      {"a folder",
       [](const fs::path& p) {
         fs::create_directory(p);
         return p.string();
       }},
      {"a missing file", [](const fs::path& p) { return p.string(); }},
      {"a 1 GiB sparse file",
       [](const fs::path& p) {
         std::ofstream(p.string()).close();
         fs::resize_file(p, std::uintmax_t(1) << 30);
         return p.string();
       }},
      {"an unreadable file",
       [](const fs::path& p) {
         std::ofstream(p.string()) << "cluster: {}\n";
         fs::permissions(p, fs::perms::none);
         return p.string();
       }},
  };
  return h;
}

}  // namespace

TEST_CASE("file safety: every reader refuses devices, pipes, folders and huge files at once", "[file_safety][cli]") {
  Inputs in;
  for (const Reader& r : readers()) {
    for (const Hostile& h : hostile_files()) {
      if (h.name == "an unreadable file" && ::geteuid() == 0) continue;  // root reads it anyway
      DYNAMIC_SECTION(r.name << " given " << h.name) {
        const fs::path spot = in.dir / "hostile";
        std::error_code ec;
        fs::remove_all(spot, ec);
        fs::remove_all(in.dir / "hostile_catalog", ec);
        std::string x = h.make(spot);
        std::map<std::string, std::string> values = in.files;
        if (r.args.find("{XC}") != std::string::npos) {
          // The catalog with its GPU file replaced by the hostile one.
          const fs::path cat = in.dir / "hostile_catalog";
          fs::copy(in.files.at("{C}"), cat, fs::copy_options::recursive);
          fs::remove(cat / "gpus.yaml");
          if (h.name == "a missing file") {
          } else if (x.rfind("/dev/", 0) == 0) {
            fs::create_symlink(x, cat / "gpus.yaml");
          } else {
            fs::rename(x, cat / "gpus.yaml");
          }
          x = (cat / "gpus.yaml").string();
          values["{XC}"] = cat.string();
        }
        values["{X}"] = x;
        const Outcome o = run_ringsim(replaced(r.args, values), in.dir, 30);
        INFO(o.err);
        CHECK_FALSE(o.timed_out);
        CHECK(o.status == 2);
        CHECK_THAT(o.err, Catch::Contains(x));
        CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
        // The goal: an answer within 2 s (seen here, not checked) in under 100 MB (not checked under the
        // sanitizers' shadow memory).
        INFO(r.name << " given " << h.name << ": " << o.seconds << " s, " << o.max_rss_kb / 1024 << " MB");
        if (!kSanitized) CHECK(o.max_rss_kb < 100 * 1024);
        fs::remove_all(spot, ec);
      }
    }
  }
}

TEST_CASE("file safety: a failed write says why, exits 2 and leaves no file", "[file_safety][cli]") {
  Inputs in;
  const std::string predict = "--catalog " + in.files.at("{C}") + " predict " + in.files.at("{S}") + " --no-band ";
  SECTION("a full device") {
    const Outcome o = run_ringsim(predict + "--json /dev/full", in.dir);
    CHECK(o.status == 2);
    CHECK(o.err == "/dev/full: error: cannot write the output file: No space left on device\n");
    struct stat st {};
    REQUIRE(::stat("/dev/full", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));  // written in place, never renamed over
  }
  SECTION("a folder") {
    const Outcome o = run_ringsim(predict + "--trace " + in.dir.string(), in.dir);
    CHECK(o.status == 2);
    CHECK(o.err == in.dir.string() + ": error: cannot write the output file: Is a directory\n");
  }
  SECTION("a file-size limit (as a full file system): the old file kept, no temporary file left") {
    const std::string out = (in.dir / "o.json").string();
    std::ofstream(out) << "a user's earlier result\n";
    // Ignoring SIGXFSZ turns the limit into EFBIG, as a full disk gives ENOSPC.
    const auto r =
        ringsim::test::run_command("bash -c \"trap '' XFSZ; ulimit -f 1; " + std::string(RINGSIM_TEST_BINARY) + " " +
                                   predict + "--json " + out + "\"");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains(out + ": error: cannot write the output file: File too large"));
    CHECK(ringsim::test::slurp(out) == "a user's earlier result\n");
    for (const auto& e : fs::directory_iterator(in.dir))
      CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  }
  SECTION("/dev/null takes every output") {
    const Outcome o = run_ringsim(predict + "--json /dev/null --trace /dev/null", in.dir);
    CHECK(o.status == 0);
    struct stat st {};
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  }
}

TEST_CASE("file safety: RINGSIM_JOBS sets how many points sweep and plan run at once", "[file_safety][cli]") {
  Inputs in;
  const std::string sweep = "--catalog " + in.files.at("{C}") + " sweep " + in.files.at("{S}") +
                            " --sweep cluster.nodes=1,2,4 --csv " + (in.dir / "s.csv").string();
  ::setenv("RINGSIM_JOBS", "1", 1);
  const Outcome one = run_ringsim(sweep, in.dir);
  ::unsetenv("RINGSIM_JOBS");
  CHECK(one.status == 0);
  CHECK_THAT(one.err, Catch::Contains("ringsim sweep: 3 points, 1 at once"));
  const Outcome flag = run_ringsim(sweep + " -j 2", in.dir);
  CHECK_THAT(flag.err, Catch::Contains("ringsim sweep: 3 points, 2 at once"));
}

TEST_CASE("new user: reports say where a value came from, and what a refused run would cost", "[new_user][cli]") {
  Inputs in;
  const std::string predict =
      std::string(RINGSIM_TEST_BINARY) + " --catalog " + in.files.at("{C}") + " predict " + in.files.at("{S}") + " ";
  SECTION("a single-GPU rate given with --set is reported as --set's") {
    const auto r = ringsim::test::run_command(predict + "--no-band --set model.samples_per_sec_single_gpu=1350");
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("from --set model.samples_per_sec_single_gpu=1350"));
    CHECK_THAT(r.output, !Catch::Contains("/s in " + in.files.at("{S}")));
  }
  SECTION("a scenario without a name is called by its file's") {
    const auto r = ringsim::test::run_command(predict + "--no-band");
    CHECK_THAT(r.output, Catch::Contains("ringsim predict: scenario (flow fidelity)"));
  }
  SECTION("a megabyte-long value echoed in an error is cut to a line") {
    in.put("{R}", "long.csv", "cluster.nodes,images_per_sec\n" + std::string(1 << 20, '9') + ",300\n");
    const Outcome o = run_ringsim(
        "--catalog " + in.files.at("{C}") + " calibrate " + in.files.at("{S}") + " --runs " + in.files.at("{R}"),
        in.dir);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains("999..."));
    CHECK(o.err.size() < 300);
  }
  SECTION("a run refused as too long says how much of it the band is") {
    const auto r = ringsim::test::run_command(predict + "--max-seconds 0.001");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("the band's 17 runs are") && Catch::Contains("(--no-band leaves them out)"));
  }
}

TEST_CASE("file safety: the sanitizer build's note on a late exception is not taken for output", "[file_safety]") {
  const std::string note =
      "==7==WARNING: ASan is ignoring requested __asan_handle_no_return: stack type: default top: 0x1; bottom "
      "0x2; size: 0x3 (4)\nFalse positive error reports may follow\nFor details see "
      "https://github.com/google/sanitizers/issues/189\n";
  CHECK(ringsim::test::without_asan_notes(note + "/dev/full: error: x\n") == "/dev/full: error: x\n");
  CHECK(ringsim::test::without_asan_notes("a\n" + note) == "a\n");
  CHECK(ringsim::test::without_asan_notes("plain\n") == "plain\n");
}
