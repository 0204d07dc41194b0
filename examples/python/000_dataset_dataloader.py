# Seed 000, section 4.1 (Dataset and DataLoader). Changed: the import lines only.
import ember as torch
from ember.utils.data import Dataset, DataLoader


class SimpleDataset(Dataset):
    def __init__(self, data, labels):
        self.data, self.labels = data, labels

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        return self.data[idx], self.labels[idx]


dataset = SimpleDataset(torch.randn(1000, 784), torch.randint(0, 10, (1000,)))
loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4, pin_memory=True, drop_last=True)
