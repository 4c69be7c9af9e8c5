// The port network of one row block of a layer's arrays (see block_network.hpp).
#include "nn/block_network.hpp"

namespace anasim::nn::fast {

PortNetwork row_block_network(const HardwareConfig& cfg, int r0, int r1, int first_dac, int outputs,
                              const std::vector<BlockTile>& tiles, std::vector<double>* cap) {
  const int nr = r1 - r0;
  PortNetwork net;
  // Internal node count first: DAC row pins (with rout) and the tiles' own nodes.
  int n_int = 0;
  std::vector<int> rowpin_int(nr, -1);
  for (int p = r0; p < r1; ++p)
    if (cfg.dac_rout > 0 && p >= first_dac) rowpin_int[p - r0] = n_int++;
  int tile_nodes = 0;
  for (const BlockTile& t : tiles) {
    const CrossbarTopology topo(*t.spec);
    tile_nodes += topo.nodes() - topo.pins();
  }
  net.n_int = n_int + tile_nodes;
  net.n_port = nr + outputs;
  const int port0 = net.n_int;
  std::vector<int> rowpin(nr);
  for (int i = 0; i < nr; ++i) {
    if (rowpin_int[i] >= 0) {
      rowpin[i] = rowpin_int[i];
      net.edge(rowpin_int[i], port0 + i, 1.0 / cfg.dac_rout);  // DAC source behind rout
    } else {
      rowpin[i] = port0 + i;
    }
  }
  int next = n_int;
  for (const BlockTile& t : tiles) {
    std::vector<int> cp(t.spec->cols);
    for (int j = 0; j < t.spec->cols; ++j) cp[j] = port0 + nr + t.col0 + j;
    add_tile(net, *t.spec, *t.g, rowpin, cp, next, cap);
  }
  return net;
}

}  // namespace anasim::nn::fast
