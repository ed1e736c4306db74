// The routes SimGrid computes on a platform file, for tests/sim: for every ordered pair of
// hosts (or the pairs named on the command line, "SRC:DST"), one line
//   SRC DST LATENCY LINK LINK ...
// with the links in the order a message crosses them. Built by the tests against
// libsimgrid-dev; SimGrid's routing is what the petacomm routing models must agree with.
#include <cstdio>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  simgrid::s4u::Engine engine(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: route_dump PLATFORM [SRC:DST ...]\n");
    return 2;
  }
  engine.load_platform(argv[1]);
  std::vector<std::pair<simgrid::s4u::Host *, simgrid::s4u::Host *>> pairs;
  if (argc > 2) {
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      const auto colon = arg.find(':');
      pairs.emplace_back(engine.host_by_name(arg.substr(0, colon)),
                         engine.host_by_name(arg.substr(colon + 1)));
    }
  } else {
    for (auto *a : engine.get_all_hosts())
      for (auto *b : engine.get_all_hosts())
        if (a != b) pairs.emplace_back(a, b);
  }
  for (const auto &[src, dst] : pairs) {
    std::vector<simgrid::s4u::Link *> links;
    double latency = 0;
    src->route_to(dst, links, &latency);
    std::printf("%s %s %.9g", src->get_cname(), dst->get_cname(), latency);
    for (const auto *link : links) std::printf(" %s", link->get_cname());
    std::printf("\n");
  }
  return 0;
}
