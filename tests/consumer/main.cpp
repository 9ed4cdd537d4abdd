// Uses kpl::core as an application would: versions, a kernel on the default
// execution space, and an HDF5 round trip. Exits non-zero on any mismatch.
#include <kpl/hdf5_io.hpp>
#include <kpl/info.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  std::cout << kpl::format_info(kpl::collect_info());

  const int length = 101;
  Kokkos::View<double*> values("values", length);
  Kokkos::parallel_for(
      "kpl_consumer::fill", length, KOKKOS_LAMBDA(const int i) { values(i) = i; });
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, values);

  const std::string path = argc > 1 ? argv[1] : "kpl_consumer.h5";
  {
    kpl::hdf5::OutputFile output(path);
    output.write("values", host);
    output.commit();
  }
  const auto read = kpl::hdf5::InputFile(path).read<double, 1>("values");
  std::remove(path.c_str());
  for (int i = 0; i < length; ++i) {
    if (read(i) != i) {
      std::cerr << "kpl_consumer: element " << i << " is " << read(i) << "\n";
      return 1;
    }
  }
  std::cout << "kpl_consumer: ok\n";
  return 0;
}
