// The floor of the mandated stack: a prometheus-cpp Exposer (civetweb, one
// worker thread, as headroom uses it) serving 54 gauges and nothing else.
// bench/watch/run builds and scrapes it beside headroom and node_exporter, so
// the RSS ratio can be read against what the library alone costs.
//   c++ -O2 -std=c++20 floor.cc -lprometheus-cpp-pull -lprometheus-cpp-core
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <csignal>
#include <memory>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  prometheus::Exposer exposer{argv[1], 1};
  auto registry = std::make_shared<prometheus::Registry>();
  auto& family = prometheus::BuildGauge().Name("floor_value").Help("a value").Register(*registry);
  for (int i = 0; i < 54; ++i) family.Add({{"path", "/data/" + std::to_string(i)}}).Set(i);
  exposer.RegisterCollectable(registry);
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;
}
