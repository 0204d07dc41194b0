# Seed 000, section 3.3 (common layers). Changed: the import lines only.
import ember as torch
import ember.nn as nn

linear = nn.Linear(512, 256)
embedding = nn.Embedding(num_embeddings=50000, embedding_dim=768)
print(embedding(torch.tensor([0, 42])).shape)
layer_norm = nn.LayerNorm(768)
dropout = nn.Dropout(p=0.1)
